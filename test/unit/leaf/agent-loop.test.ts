import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { AppError } from '../../../src/app-error.js';
import { runAgentLoop } from '../../../src/leaf/agent-loop.js';
import { LEAF_PROTOCOL } from '../../../src/protocol/protocol.js';
import { loopFailure, type Trajectory } from '../../../src/leaf/trajectory.js';
import { createSglangClient } from '../../../src/llm/sglang-client.js';
import { classifyError } from '../../../src/pipeline/outcome.js';
import type { AssistantMessage, ChatModel, ChatRequest, ChatResponse } from '../../../src/llm/chat-model.js';
import { journalPathFor, parseTrajectoryJournal } from '../../../src/observability/trajectory-journal.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';

/** An in-process model that answers from a list of turns and records each request's messages. */
function scriptedModel(
  turns: Array<Partial<ChatResponse> | ((req: ChatRequest) => Promise<ChatResponse>) | Error>,
) {
  const requests: string[] = [];
  const model: ChatModel = {
    model: 'scripted',
    async complete(req) {
      requests.push(JSON.stringify(req.messages));
      const turn = turns.shift();
      if (turn === undefined) throw new AppError('LLM_QUERY_ERROR', 'script exhausted');
      if (turn instanceof Error) throw turn;
      if (typeof turn === 'function') return turn(req);
      const message: AssistantMessage = turn.message ?? { role: 'assistant', content: 'done' };
      return {
        message,
        finishReason: turn.finishReason ?? (message.tool_calls ? 'tool_calls' : 'stop'),
        usage: turn.usage ?? { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
      };
    },
  };
  return { model, requests };
}

let n = 0;
function toolTurn(
  name: string,
  args: Record<string, unknown> | string,
  reasoning?: string,
): Partial<ChatResponse> {
  return {
    message: {
      role: 'assistant',
      content: null,
      ...(reasoning ? { reasoning_content: reasoning } : {}),
      tool_calls: [
        {
          id: `call_${++n}`,
          type: 'function',
          function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
        },
      ],
    },
  };
}

let tmp: string;
let workdir: string;
let sandbox: Sandbox;

beforeEach(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'frognano-loop-'));
  workdir = join(tmp, 'repo');
  mkdirSync(workdir);
  writeFileSync(join(workdir, 'a.py'), 'x = 1\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: workdir });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'base');
  sandbox = await createLocalSandboxFactory().create({ jobId: 'loop-test', hostWorkdir: workdir });
});

afterEach(async () => {
  await sandbox.destroy();
  rmSync(tmp, { recursive: true, force: true });
});

describe('runAgentLoop', () => {
  it('starts with [system, user], runs tool calls in order, ends as agent with the patch', async () => {
    const { model, requests } = scriptedModel([
      toolTurn('Read', { file_path: 'a.py' }, 'look first'),
      toolTurn('Edit', { file_path: 'a.py', old_string: 'x = 1', new_string: 'x = 2' }),
      { message: { role: 'assistant', content: 'Changed x to 2.', reasoning_content: 'done' } },
    ]);
    const trajectoryPath = join(tmp, 'out', 'trajectory.json');
    const t = await runAgentLoop({ model, sandbox, instruction: 'set x to 2', jobId: 'j1', trajectoryPath });

    expect(t.exitReason).toBe('agent');
    expect(t.finalMessage).toBe('Changed x to 2.');
    expect(t.steps).toHaveLength(3);
    expect(t.messages.slice(0, 2)).toEqual([
      { role: 'system', content: LEAF_PROTOCOL.system_prompt },
      { role: 'user', content: 'set x to 2' },
    ]);
    expect(t.messages[2]).toMatchObject({ role: 'assistant', reasoning_content: 'look first' });
    expect(t.messages[3]).toEqual({
      role: 'tool',
      tool_call_id: t.steps[0]!.toolCalls[0]!.id,
      content: 'a.py\n1. x = 1',
    });
    expect(t.steps[1]!.toolCalls[0]!.observation).toBe('Edited a.py (1 replacement).');
    expect(t.patch).toContain('-x = 1\n+x = 2');
    expect(readFileSync(join(workdir, 'a.py'), 'utf8')).toBe('x = 2\n');
    expect(t.totalTokens).toEqual({ prompt: 300, completion: 30 });

    // Append-only history: each request's messages begin with the previous request's messages.
    expect(requests).toHaveLength(3);
    for (let i = 1; i < requests.length; i++) {
      const prev = JSON.parse(requests[i - 1]!) as unknown[];
      const cur = JSON.parse(requests[i]!) as unknown[];
      expect(cur.slice(0, prev.length)).toEqual(prev);
      expect(cur.length).toBeGreaterThan(prev.length);
    }
    const written = JSON.parse(readFileSync(trajectoryPath, 'utf8')) as Trajectory;
    expect(written.exitReason).toBe('agent');
    expect(written.patch).toBe(t.patch);
  });

  it('appends each step to the journal, so a crash leaves a readable partial trajectory', async () => {
    const { model } = scriptedModel([
      toolTurn('Glob', { pattern: '*.py' }),
      toolTurn('Glob', { pattern: '*.md' }),
      {},
    ]);
    const trajectoryPath = join(tmp, 'trajectory.json');
    const journal = journalPathFor(trajectoryPath);
    const seen: Array<{ steps: number; exitReason: string | null; json: boolean }> = [];
    const final = await runAgentLoop({
      model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
      trajectoryPath,
      onStep: (_step, live) => {
        const t = parseTrajectoryJournal(readFileSync(journal, 'utf8'));
        seen.push({ steps: t.steps.length, exitReason: t.exitReason, json: existsSync(trajectoryPath) });
        // What a crash right now would leave is the trajectory so far, observations included.
        expect(t).toEqual({ ...structuredClone(live), patch: null });
      },
    });
    expect(seen).toEqual([
      { steps: 1, exitReason: null, json: false },
      { steps: 2, exitReason: null, json: false },
      { steps: 3, exitReason: 'agent', json: false },
    ]);
    expect(JSON.parse(readFileSync(trajectoryPath, 'utf8'))).toEqual(final);
    expect(existsSync(journal)).toBe(false);
  });

  it('keeps a step line as long as its own step, whatever the history (150 steps of 20 KB)', async () => {
    writeFileSync(join(workdir, 'big.txt'), `${'y'.repeat(99)}\n`.repeat(200));
    const turns = Array.from({ length: 150 }, () => toolTurn('Read', { file_path: 'big.txt' }));
    const { model } = scriptedModel(turns);
    const trajectoryPath = join(tmp, 'long', 'trajectory.json');
    const sizes: number[] = [];
    let last = 0;
    await runAgentLoop({
      model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
      trajectoryPath,
      limits: { maxSteps: 150 },
      onStep: () => {
        const size = statSync(journalPathFor(trajectoryPath)).size;
        sizes.push(size - last);
        last = size;
      },
    });
    expect(sizes).toHaveLength(150);
    const step1 = sizes[1]!; // sizes[0] also holds the start line
    // Each append writes one step (≈ 20 KB observation once), not the history.
    for (const added of sizes.slice(1)) expect(Math.abs(added - step1)).toBeLessThan(64);
    expect(step1).toBeGreaterThan(20_000);
    expect(step1).toBeLessThan(2 * 20_000);
  });

  it('reads a journal whose last line a crash cut short', () => {
    const lines = [
      JSON.stringify({
        type: 'start',
        version: 1,
        jobId: 'j',
        model: 'm',
        startedAt: 't',
        tools: [],
        messages: [],
      }),
      JSON.stringify({
        type: 'step',
        step: {
          index: 1,
          startedAt: 't',
          llmMs: 1,
          toolMs: 1,
          finishReason: 'tool_calls',
          usage: null,
          toolCalls: [{ id: 'c', name: 'Bash', arguments: '{}', durationMs: 1 }],
        },
        messages: [
          { role: 'assistant', content: null },
          { role: 'tool', tool_call_id: 'c', content: 'out' },
        ],
        state: {
          exitReason: null,
          error: null,
          finalMessage: null,
          contextTokens: 5,
          totalTokens: { prompt: 4, completion: 1 },
          elapsedMs: 9,
        },
      }),
      '{"type":"step","step":{"ind',
    ];
    const t = parseTrajectoryJournal(lines.join('\n'));
    expect(t.steps).toHaveLength(1);
    expect(t.steps[0]!.toolCalls[0]!.observation).toBe('out');
    expect(t.contextTokens).toBe(5);
    expect(() => parseTrajectoryJournal(`${lines[2]}\n${lines[0]}`)).toThrow(/line 1 is not JSON/);
  });

  it('turns arguments that are not a JSON object into {}', async () => {
    const { model } = scriptedModel([
      toolTurn('Read', '["a.py"]'),
      toolTurn('Bash', '{"command": "echo hi"'),
      {},
    ]);
    const t = await runAgentLoop({ model, sandbox, instruction: 'x', jobId: 'j' });
    expect(t.steps[0]!.toolCalls[0]!.observation).toBe('ValueError: file_path is required');
    expect(t.steps[1]!.toolCalls[0]!.observation).toBe('ValueError: command is required');
    expect(t.exitReason).toBe('agent');
  });

  it('ends as max_turns at the step cap', async () => {
    const turns = Array.from({ length: 10 }, () => toolTurn('Glob', { pattern: '*.py' }));
    const { model } = scriptedModel(turns);
    const t = await runAgentLoop({ model, sandbox, instruction: 'x', jobId: 'j', limits: { maxSteps: 3 } });
    expect(t.exitReason).toBe('max_turns');
    expect(t.steps).toHaveLength(3);
  });

  it('ends as max_context_len when usage reaches the cap, and on a context-length error', async () => {
    const big = { prompt_tokens: 900, completion_tokens: 200, total_tokens: 1100 };
    const first = await runAgentLoop({
      model: scriptedModel([{ ...toolTurn('Glob', { pattern: '*' }), usage: big }, {}]).model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
      limits: { maxContextTokens: 1000 },
    });
    expect(first.exitReason).toBe('max_context_len');
    expect(first.contextTokens).toBe(1100);

    const second = await runAgentLoop({
      model: scriptedModel([
        new AppError(
          'LLM_CONTEXT_OVERFLOW',
          "The input (140000 tokens) is longer than the model's context length (131072 tokens).",
        ),
      ]).model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
    });
    expect(second.exitReason).toBe('max_context_len');
    expect(second.error).toContain('context length');
  });

  it('ends as max_tokens_per_turn on finish_reason length', async () => {
    const { model } = scriptedModel([
      { message: { role: 'assistant', content: 'cut mid-sen' }, finishReason: 'length' },
    ]);
    const t = await runAgentLoop({ model, sandbox, instruction: 'x', jobId: 'j' });
    expect(t.exitReason).toBe('max_tokens_per_turn');
  });

  it('ends as llm_query_error with the error code when the model fails', async () => {
    const { model } = scriptedModel([
      new AppError('LLM_UNREACHABLE', 'no server at http://127.0.0.1:1/v1', { retryable: true }),
    ]);
    const t = await runAgentLoop({ model, sandbox, instruction: 'x', jobId: 'j' });
    expect(t.exitReason).toBe('llm_query_error');
    expect(t.errorCode).toBe('LLM_UNREACHABLE');
    expect(t.patch).toBe('');
  });

  it('ends as tool_error when the sandbox dies mid-run', async () => {
    const { model } = scriptedModel([
      async () => {
        await sandbox.destroy();
        return {
          message: toolTurn('Bash', { command: 'true' }).message!,
          finishReason: 'tool_calls',
          usage: null,
        };
      },
    ]);
    const t = await runAgentLoop({ model, sandbox, instruction: 'x', jobId: 'j' });
    expect(t.exitReason).toBe('tool_error');
    expect(t.errorCode).toBe('SANDBOX_GONE');
  });

  it('ends as cancelled when the signal aborts, also during a long command', async () => {
    const controller = new AbortController();
    const { model } = scriptedModel([toolTurn('Bash', { command: 'sleep 30', timeout: 60 }), {}]);
    setTimeout(() => controller.abort(new AppError('CANCELLED', 'label removed by @octocat')), 300);
    const started = Date.now();
    const t = await runAgentLoop({ model, sandbox, instruction: 'x', jobId: 'j', signal: controller.signal });
    expect(t.exitReason).toBe('cancelled');
    expect(t.error).toBe('label removed by @octocat');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('ends as max_time when the wall-clock cap passes during a request', async () => {
    const slow = async (req: ChatRequest): Promise<ChatResponse> =>
      new Promise((_resolve, reject) => {
        const t = setTimeout(() => reject(new Error('should have been aborted')), 20_000);
        req.signal?.addEventListener('abort', () => {
          clearTimeout(t);
          reject(new AppError('CANCELLED', 'aborted'));
        });
      });
    const { model } = scriptedModel([slow]);
    const t = await runAgentLoop({
      model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
      limits: { maxTimeMs: 200 },
    });
    expect(t.exitReason).toBe('max_time');
  });
});

/** A loopback port nothing listens on (bound, then closed): connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the error the loop ended with (loopFailure): classified by its code, never its message', () => {
  it("a model server nobody answers at is llm_unreachable, from the client's own code", async () => {
    const model = createSglangClient({
      baseURL: `http://127.0.0.1:${await closedPort()}/v1`,
      model: 'frognano-4b',
      maxRetries: 1,
      retryBaseDelayMs: 1,
      maxRetryDelayMs: 5,
    });
    const t = await runAgentLoop({ model, sandbox, instruction: 'x', jobId: 'j' });
    expect(t).toMatchObject({
      exitReason: 'llm_query_error',
      errorCode: 'LLM_UNREACHABLE',
      errorRetryable: true,
    });
    expect(t.errorDetails).toMatchObject({ attempts: 2 });
    expect(classifyError(loopFailure(t))).toMatchObject({ kind: 'llm_unreachable', message: t.error });
  });

  it('a failed model request keeps its HTTP status in the details, not in the message', async () => {
    const failure = new AppError('LLM_QUERY_ERROR', 'the model server failed on every try', {
      retryable: true,
      details: { baseURL: 'http://127.0.0.1:1/v1', status: 503, attempts: 4 },
    });
    const t = await runAgentLoop({
      model: scriptedModel([failure]).model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
    });
    expect(t.errorDetails).toEqual(failure.details);
    expect(classifyError(loopFailure(t))).toEqual({
      kind: 'llm_unreachable',
      message: 'the model server failed on every try',
      status: 503,
      summary: undefined,
    });
  });

  it('a model failure that is no AppError is LLM_QUERY_ERROR; a tool failure that is none is TOOL_ERROR', async () => {
    const t = await runAgentLoop({
      model: scriptedModel([new TypeError('fetch failed')]).model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
    });
    expect(t).toMatchObject({
      exitReason: 'llm_query_error',
      errorCode: 'LLM_QUERY_ERROR',
      error: 'fetch failed',
    });
    const broken: Sandbox = Object.create(sandbox, {
      exec: { value: () => Promise.reject(new TypeError('the sandbox fell over')) },
    }) as Sandbox;
    const u = await runAgentLoop({
      model: scriptedModel([toolTurn('Bash', { command: 'true' })]).model,
      sandbox: broken,
      instruction: 'x',
      jobId: 'j',
    });
    expect(u).toMatchObject({ exitReason: 'tool_error', errorCode: 'TOOL_ERROR' });
    expect(classifyError(loopFailure(u))).toMatchObject({ kind: 'failed', code: 'TOOL_ERROR' });
  });

  it("a cancelled loop keeps who cancelled, from the signal's reason", async () => {
    const controller = new AbortController();
    controller.abort(
      new AppError('CANCELLED', 'the frognano label was removed', { details: { by: 'carol' } }),
    );
    const { model } = scriptedModel([{}]);
    const t = await runAgentLoop({ model, sandbox, instruction: 'x', jobId: 'j', signal: controller.signal });
    expect(t.errorDetails).toEqual({ by: 'carol' });
    expect(classifyError(loopFailure(t))).toEqual({
      kind: 'cancelled',
      by: 'carol',
      reason: 'the frognano label was removed',
      summary: undefined,
    });
  });

  it('a loop out of time is timed_out naming the limit; an answer, or a cap reached, is no failure', async () => {
    const hung = (req: ChatRequest): Promise<ChatResponse> =>
      new Promise((_resolve, reject) =>
        req.signal?.addEventListener('abort', () => reject(req.signal?.reason)),
      );
    const t = await runAgentLoop({
      model: scriptedModel([hung]).model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
      limits: { maxTimeMs: 200 },
    });
    expect(classifyError(loopFailure(t))).toEqual({
      kind: 'timed_out',
      message: 'the model did not finish within the time limit of 0.2 s',
      summary: undefined,
    });
    const answered = await runAgentLoop({
      model: scriptedModel([{}]).model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
    });
    expect(answered.exitReason).toBe('agent');
    expect(loopFailure(answered)).toBeNull();
    const capped = await runAgentLoop({
      model: scriptedModel([toolTurn('Glob', { pattern: '*' })]).model,
      sandbox,
      instruction: 'x',
      jobId: 'j',
      limits: { maxSteps: 1 },
    });
    expect(capped.exitReason).toBe('max_turns');
    expect(loopFailure(capped)).toBeNull();
  });
});
