import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { LEAF_PROTOCOL } from '../../../src/protocol/protocol.js';
import type { Trajectory } from '../../../src/leaf/trajectory.js';
import type { AssistantMessage, ChatMessage } from '../../../src/llm/chat-model.js';
import { createChatModelFromUrl, createReplayModel } from '../../../src/leaf/replay-model.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { createTrajectoryJournal, journalPathFor } from '../../../src/observability/trajectory-journal.js';
import { startScriptedModelServer } from '../../helpers/scripted-model-server.js';

const tools = LEAF_PROTOCOL.tools;
const dir = mkdtempSync(join(tmpdir(), 'frognano-replay-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const first: AssistantMessage = {
  role: 'assistant',
  content: null,
  reasoning_content: 'Read the module first.',
  tool_calls: [
    { id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"temp.py"}' } },
  ],
};
const second: AssistantMessage = {
  role: 'assistant',
  content: '',
  tool_calls: [
    {
      id: 'call_2',
      type: 'function',
      function: {
        name: 'Edit',
        arguments: '{"file_path":"temp.py","old_string":"9 / 5","new_string":"9 / 5 + 32"}',
      },
    },
  ],
};
const last: AssistantMessage = {
  role: 'assistant',
  content: 'Fixed the conversion.',
  reasoning_content: 'Done.',
};

const start: ChatMessage[] = [
  { role: 'system', content: 'system prompt' },
  { role: 'user', content: 'Fix c2f' },
];
const recordedMessages: ChatMessage[] = [
  ...start,
  first,
  { role: 'tool', tool_call_id: 'call_1', content: '1\tdef c2f(c): return c * 9 / 5' },
  second,
  { role: 'tool', tool_call_id: 'call_2', content: 'ok' },
  last,
];

function step(index: number, usage: Trajectory['steps'][number]['usage']): Trajectory['steps'][number] {
  return {
    index,
    startedAt: '2025-01-01T00:00:00.000Z',
    llmMs: 10,
    toolMs: 1,
    finishReason: 'tool_calls',
    usage,
    toolCalls: [],
  };
}

const trajectory: Trajectory = {
  version: 1,
  jobId: 'job-1',
  model: 'microsoft/FrogNano-4B-2609',
  startedAt: '2025-01-01T00:00:00.000Z',
  messages: recordedMessages,
  tools: [...tools],
  steps: [
    step(1, { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 }),
    step(2, null),
    // No step 3 recorded (e.g. a crash after the message was stored).
  ],
  exitReason: 'agent',
  error: null,
  finalMessage: 'Fixed the conversion.',
  contextTokens: 120,
  totalTokens: { prompt: 100, completion: 20 },
  elapsedMs: 50,
  patch: '',
};

function writeTrajectory(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

async function failure(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

function syncFailure(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected a throw');
}

describe('createReplayModel', () => {
  it('replays the assistant messages in order, from a file', async () => {
    const model = createReplayModel(writeTrajectory('ok.json', trajectory));
    expect(model.model).toBe('replay:microsoft/FrogNano-4B-2609');

    const history: ChatMessage[] = [...start];
    const r1 = await model.complete({ messages: history, tools });
    expect(r1).toEqual({
      message: first,
      finishReason: 'tool_calls',
      usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
    });
    history.push(r1.message, { role: 'tool', tool_call_id: 'call_1', content: 'whatever the tool said now' });

    const r2 = await model.complete({ messages: history, tools });
    expect(r2.message).toEqual(second);
    expect(r2.finishReason).toBe('tool_calls');
    expect(r2.usage).toBeNull();
    history.push(r2.message, { role: 'tool', tool_call_id: 'call_2', content: 'ok' });

    const r3 = await model.complete({ messages: history, tools });
    expect(r3).toEqual({ message: last, finishReason: 'stop', usage: null });
    history.push(r3.message);

    const err = await failure(model.complete({ messages: history, tools }));
    expect(err.code).toBe('LLM_QUERY_ERROR');
    expect(err.message).toMatch(/^replay exhausted/);
    expect(err.message).toContain('ok.json');
  });

  it('replays a crashed run from its journal, by the missing .json path or the .jsonl path', async () => {
    const path = join(dir, 'crashed', 'trajectory.json');
    await createTrajectoryJournal(path, createSilentLogger()).append({
      ...trajectory,
      messages: recordedMessages.slice(0, 4),
      steps: [trajectory.steps[0]!],
      exitReason: null,
    });
    for (const source of [path, journalPathFor(path)]) {
      const model = createReplayModel(source);
      const r1 = await model.complete({ messages: [...start], tools });
      expect(r1.message).toEqual(first);
      expect(r1.usage).toEqual({ prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 });
    }
  });

  it('accepts a parsed trajectory and answers by history, so a repeated request gets the same answer', async () => {
    const model = createReplayModel(trajectory);
    const a = await model.complete({ messages: start, tools });
    const b = await model.complete({ messages: start, tools });
    expect(a.message).toEqual(first);
    expect(b.message).toEqual(first);
  });

  it('returns copies that the caller may change', async () => {
    const model = createReplayModel(trajectory);
    const r = await model.complete({ messages: start, tools });
    r.message.tool_calls?.splice(0);
    expect((await model.complete({ messages: start, tools })).message.tool_calls).toHaveLength(1);
  });

  it('throws CANCELLED on an aborted signal', async () => {
    const err = await failure(
      createReplayModel(trajectory).complete({ messages: start, tools, signal: AbortSignal.abort() }),
    );
    expect(err.code).toBe('CANCELLED');
  });

  it('names the file when it is missing, not JSON or not a trajectory', () => {
    const missing = join(dir, 'missing.json');
    const e1 = syncFailure(() => createReplayModel(missing));
    expect(e1.code).toBe('CONFIG_INVALID');
    expect(e1.message).toContain(missing);

    const notJson = writeTrajectory('bad.json', '{"version": 1,');
    const e2 = syncFailure(() => createReplayModel(notJson));
    expect(e2.code).toBe('CONFIG_INVALID');
    expect(e2.message).toContain(notJson);
    expect(e2.message).toContain('not JSON');

    const wrongVersion = writeTrajectory('v2.json', { ...trajectory, version: 2 });
    const e3 = syncFailure(() => createReplayModel(wrongVersion));
    expect(e3.message).toContain(wrongVersion);
    expect(e3.message).toContain('version');

    const badMessage = writeTrajectory('msg.json', {
      ...trajectory,
      messages: [
        ...start,
        {
          role: 'assistant',
          content: 'x',
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'Read' } }],
        },
      ],
    });
    const e4 = syncFailure(() => createReplayModel(badMessage));
    expect(e4.message).toContain(badMessage);
    expect(e4.message).toContain('messages');
  });
});

describe('createChatModelFromUrl', () => {
  it('gives a replay model for replay:<path>', async () => {
    const path = writeTrajectory('url.json', trajectory);
    const model = createChatModelFromUrl(`replay:${path}`, { model: 'ignored' });
    expect(model.model).toBe('replay:microsoft/FrogNano-4B-2609');
    expect((await model.complete({ messages: start, tools })).message).toEqual(first);
  });

  it('rejects replay: without a path', () => {
    expect(syncFailure(() => createChatModelFromUrl('replay:', { model: 'm' })).code).toBe('CONFIG_INVALID');
  });

  it('gives an SGLang client for an http URL', async () => {
    const server = await startScriptedModelServer({ script: [{ kind: 'final', content: 'hello' }] });
    try {
      const model = createChatModelFromUrl(server.url, { model: 'served-name' });
      expect(model.model).toBe('served-name');
      const response = await model.complete({ messages: start, tools });
      expect(response.message.content).toBe('hello');
      expect(server.requests[0]?.body.model).toBe('served-name');
    } finally {
      await server.close();
    }
  });
});
