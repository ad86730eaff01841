import { getEventListeners } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { LEAF_PROTOCOL } from '../../../src/protocol/protocol.js';
import type { ChatMessage } from '../../../src/llm/chat-model.js';
import {
  SGLANG_LAUNCH_HINT,
  backoffDelay,
  createSglangClient,
  isContextOverflowMessage,
  listModels,
  normalizeBaseURL,
  parseRetryAfter,
  type RetryEvent,
  type SglangClientOptions,
} from '../../../src/llm/sglang-client.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
  type ScriptedTurn,
} from '../../helpers/scripted-model-server.js';

const MODEL = 'microsoft/FrogNano-4B-2609';
const tools = LEAF_PROTOCOL.tools;

const history: ChatMessage[] = [
  { role: 'system', content: LEAF_PROTOCOL.system_prompt },
  { role: 'user', content: 'Fix the failing test in src/temp.py' },
  {
    role: 'assistant',
    content: '',
    reasoning_content: 'I should read the file first.',
    tool_calls: [
      {
        id: 'call_1',
        type: 'function',
        function: { name: 'Read', arguments: '{"file_path":"src/temp.py"}' },
      },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: '     1\tdef c2f(c):\n     2\t    return c * 9 / 5' },
];

let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(script: ScriptedTurn[]): Promise<ScriptedModelServer> {
  server = await startScriptedModelServer({ script, modelName: MODEL });
  return server;
}

function client(url: string, extra: Partial<SglangClientOptions> = {}) {
  return createSglangClient({
    baseURL: url,
    model: MODEL,
    retryBaseDelayMs: 1,
    maxRetryDelayMs: 50,
    ...extra,
  });
}

async function failure(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

/** A TCP port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('createSglangClient request', () => {
  it('sends the history, the tools and every Leaf request default, exactly', async () => {
    const s = await start([{ kind: 'final', content: 'done' }]);
    await client(s.url).complete({ messages: history, tools });
    expect(s.requests).toHaveLength(1);
    const req = s.requests[0];
    const d = LEAF_PROTOCOL.request_defaults;
    expect(req?.body).toEqual({
      model: MODEL,
      messages: history,
      tools,
      temperature: d.temperature,
      top_p: d.top_p,
      top_k: d.top_k,
      min_p: d.min_p,
      repetition_penalty: d.repetition_penalty,
      chat_template_kwargs: { enable_thinking: d.chat_template_kwargs.enable_thinking },
      max_completion_tokens: 8192,
      tool_choice: d.tool_choice,
      parallel_tool_calls: d.parallel_tool_calls,
    });
    // The Leaf values themselves, so a damaged protocol.json cannot pass silently.
    expect(req?.body).toMatchObject({
      temperature: 0.6,
      top_p: 0.95,
      top_k: 20,
      min_p: 0,
      repetition_penalty: 1,
      chat_template_kwargs: { enable_thinking: true },
      tool_choice: 'auto',
      parallel_tool_calls: true,
    });
    expect(req?.body.messages[2].reasoning_content).toBe('I should read the file first.');
    expect(req?.path).toBe('/v1/chat/completions');
    expect(req?.headers['content-type']).toContain('application/json');
  });

  it('honours maxCompletionTokens and sends the API key as a bearer token', async () => {
    const s = await start([{ kind: 'final', content: 'ok' }]);
    await client(s.url, { maxCompletionTokens: 1024, apiKey: 'sk-local' }).complete({
      messages: history,
      tools,
    });
    expect(s.requests[0]?.body.max_completion_tokens).toBe(1024);
    expect(s.requests[0]?.headers.authorization).toBe('Bearer sk-local');
  });

  it('never sends an OpenAI key from the environment', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-from-env');
    vi.stubEnv('OPENAI_ORG_ID', 'org-env');
    try {
      const s = await start([{ kind: 'final', content: 'ok' }]);
      await client(s.url).complete({ messages: history, tools });
      expect(s.requests[0]?.headers.authorization).toBe('Bearer EMPTY');
      expect(s.requests[0]?.headers['openai-organization']).toBeUndefined();
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('appends /v1 to a server URL without a path', async () => {
    const s = await start([{ kind: 'final', content: 'ok' }]);
    const bare = s.url.replace(/\/v1$/, '/');
    const response = await client(bare).complete({ messages: history, tools });
    expect(response.message.content).toBe('ok');
  });
});

describe('createSglangClient response', () => {
  it('returns parsed tool calls, reasoning_content, finish reason, usage and id', async () => {
    const s = await start([
      {
        kind: 'tool_calls',
        reasoning: 'Now run the tests.',
        calls: [
          { id: 'call_abc', name: 'Bash', arguments: { command: 'pytest -q' } },
          { id: 'call_def', name: 'Read', arguments: { file_path: 'a.py' } },
        ],
        usage: { prompt_tokens: 1200, completion_tokens: 34 },
      },
    ]);
    const response = await client(s.url).complete({ messages: history, tools });
    expect(response.message).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'Now run the tests.',
      tool_calls: [
        {
          id: 'call_abc',
          type: 'function',
          function: { name: 'Bash', arguments: '{"command":"pytest -q"}' },
        },
        { id: 'call_def', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a.py"}' } },
      ],
    });
    expect(response.finishReason).toBe('tool_calls');
    expect(response.usage).toEqual({ prompt_tokens: 1200, completion_tokens: 34, total_tokens: 1234 });
    expect(response.id).toMatch(/^[0-9a-f]{32}$/);
    expect(response.recoveredToolCalls).toBeUndefined();
  });

  it('returns a final answer with finish reason stop and computed usage', async () => {
    const s = await start([{ kind: 'final', content: 'The fix is in place.', reasoning: 'All tests pass.' }]);
    const response = await client(s.url).complete({ messages: history, tools });
    expect(response.message).toEqual({
      role: 'assistant',
      content: 'The fix is in place.',
      reasoning_content: 'All tests pass.',
    });
    expect(response.finishReason).toBe('stop');
    expect(response.usage?.prompt_tokens).toBeGreaterThan(100);
    expect(response.usage?.total_tokens).toBe(
      (response.usage?.prompt_tokens ?? 0) + (response.usage?.completion_tokens ?? 0),
    );
  });

  it('reports a length finish', async () => {
    const s = await start([{ kind: 'length', reasoning: 'thinking forever' }]);
    const response = await client(s.url).complete({ messages: history, tools });
    expect(response.finishReason).toBe('length');
    expect(response.message.tool_calls).toBeUndefined();
  });

  it('recovers qwen3_coder XML from content', async () => {
    const s = await start([
      {
        kind: 'xml_content',
        before: 'Let me read it.\n',
        calls: [{ name: 'Read', arguments: { file_path: 'src/temp.py', offset: 1, limit: 20 } }],
      },
    ]);
    const response = await client(s.url).complete({ messages: history, tools });
    expect(response.recoveredToolCalls).toBe(true);
    expect(response.finishReason).toBe('tool_calls');
    expect(response.message.content).toBe('Let me read it.');
    expect(response.message.tool_calls).toHaveLength(1);
    expect(response.message.tool_calls?.[0]?.id).toMatch(/^call_/);
    expect(response.message.tool_calls?.[0]?.function.name).toBe('Read');
    expect(JSON.parse(response.message.tool_calls?.[0]?.function.arguments ?? '')).toEqual({
      file_path: 'src/temp.py',
      offset: 1,
      limit: 20,
    });
  });

  it('keeps a recovered Write whose content quotes a Bash call and <parameter=file_path> a Write', async () => {
    const content =
      '# Agent notes\n\nThe model calls tools like this:\n\n<tool_call>\n<function=Bash>\n<parameter=command>\nrm -rf build/\n</parameter>\n</function>\n</tool_call>\n\nand names the file with <parameter=file_path>.\n';
    const s = await start([
      { kind: 'xml_content', calls: [{ name: 'Write', arguments: { file_path: 'docs/agent.md', content } }] },
    ]);
    const response = await client(s.url).complete({ messages: history, tools });
    expect(response.recoveredToolCalls).toBe(true);
    expect(response.message.tool_calls?.map((c) => c.function.name)).toEqual(['Write']);
    expect(JSON.parse(response.message.tool_calls?.[0]?.function.arguments ?? '')).toEqual({
      file_path: 'docs/agent.md',
      content,
    });
  });

  it('recovers several calls without the opener from reasoning_content', async () => {
    const s = await start([
      {
        kind: 'xml_reasoning',
        before: 'I need both files.\n',
        omitOpener: true,
        calls: [
          { name: 'Read', arguments: { file_path: 'a.py' } },
          {
            name: 'Edit',
            arguments: { file_path: 'a.py', old_string: 'x', new_string: '03106', replace_all: false },
          },
        ],
      },
    ]);
    const response = await client(s.url).complete({ messages: history, tools });
    expect(response.recoveredToolCalls).toBe(true);
    expect(response.message.content).toBeNull();
    expect(response.message.reasoning_content).toBe('I need both files.');
    expect(
      response.message.tool_calls?.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
    ).toEqual([
      ['Read', { file_path: 'a.py' }],
      ['Edit', { file_path: 'a.py', old_string: 'x', new_string: '03106', replace_all: false }],
    ]);
  });

  it('leaves text with an unfinished call alone', async () => {
    const text = 'Writing <function=Write>\n<parameter=file_path>\na.py';
    const s = await start([{ kind: 'length', content: text }]);
    const response = await client(s.url).complete({ messages: history, tools });
    expect(response.recoveredToolCalls).toBeUndefined();
    expect(response.message.content).toBe(text);
    expect(response.finishReason).toBe('length');
  });
});

describe('createSglangClient retries and errors', () => {
  it('retries 500 three times, then succeeds (4 requests)', async () => {
    const err500: ScriptedTurn = {
      kind: 'http_error',
      status: 500,
      body: { object: 'error', message: 'boom', code: 500 },
    };
    const s = await start([err500, err500, err500, { kind: 'final', content: 'ok' }]);
    const events: RetryEvent[] = [];
    const response = await client(s.url, { onRetry: (e) => events.push(e) }).complete({
      messages: history,
      tools,
    });
    expect(response.message.content).toBe('ok');
    expect(s.requests).toHaveLength(4);
    expect(events.map((e) => [e.attempt, e.kind, e.status, e.fromRetryAfter])).toEqual([
      [1, 'http', 500, false],
      [2, 'http', 500, false],
      [3, 'http', 500, false],
    ]);
    // Identical bodies on every attempt.
    expect(new Set(s.requests.map((r) => r.rawBody)).size).toBe(1);
  });

  it('backs off exponentially with jitter, capped', () => {
    for (let i = 0; i < 50; i++) {
      const d1 = backoffDelay(1, 100, 10_000);
      const d3 = backoffDelay(3, 100, 10_000);
      expect(d1).toBeGreaterThanOrEqual(75);
      expect(d1).toBeLessThanOrEqual(125);
      expect(d3).toBeGreaterThanOrEqual(300);
      expect(d3).toBeLessThanOrEqual(500);
      expect(backoffDelay(20, 100, 10_000)).toBeLessThanOrEqual(10_000);
    }
  });

  it('gives up after maxRetries on 5xx with a retryable LLM_QUERY_ERROR', async () => {
    const turn: ScriptedTurn = {
      kind: 'http_error',
      status: 503,
      body: { object: 'error', message: 'overloaded', code: 503 },
    };
    const s = await start([turn, turn, turn, turn]);
    const err = await failure(client(s.url, { maxRetries: 2 }).complete({ messages: history, tools }));
    expect(err.code).toBe('LLM_QUERY_ERROR');
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('503');
    expect(err.message).toContain('overloaded');
    expect(s.requests).toHaveLength(3);
  });

  it('honours retry-after-ms and retry-after on 429', async () => {
    const s = await start([
      {
        kind: 'http_error',
        status: 429,
        headers: { 'retry-after-ms': '30' },
        body: { object: 'error', message: 'busy', code: 429 },
      },
      { kind: 'http_error', status: 429, headers: { 'retry-after': '0' } },
      { kind: 'final', content: 'ok' },
    ]);
    const events: RetryEvent[] = [];
    const response = await client(s.url, {
      retryBaseDelayMs: 5_000,
      maxRetryDelayMs: 10_000,
      onRetry: (e) => events.push(e),
    }).complete({
      messages: history,
      tools,
    });
    expect(response.message.content).toBe('ok');
    expect(s.requests).toHaveLength(3);
    expect(events.map((e) => [e.status, e.delayMs, e.fromRetryAfter])).toEqual([
      [429, 30, true],
      [429, 0, true],
    ]);
  });

  it('bounds a long retry-after by maxRetryDelayMs', async () => {
    const s = await start([
      { kind: 'http_error', status: 429, headers: { 'retry-after': '3600' } },
      { kind: 'final', content: 'ok' },
    ]);
    const events: RetryEvent[] = [];
    await client(s.url, { maxRetryDelayMs: 20, onRetry: (e) => events.push(e) }).complete({
      messages: history,
      tools,
    });
    expect(events.map((e) => e.delayMs)).toEqual([20]);
  });

  it('parses retry-after forms', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(parseRetryAfter(new Headers({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:10 GMT' }), now)).toBe(
      10_000,
    );
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 31 Dec 2024 00:00:00 GMT' }), now)).toBe(0);
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers(), now)).toBeUndefined();
  });

  it('does not retry a 400 and keeps the server message', async () => {
    const s = await start([
      {
        kind: 'http_error',
        status: 400,
        body: { object: 'error', message: 'Invalid tool_choice value', code: 400 },
      },
      { kind: 'final', content: 'never' },
    ]);
    const events: RetryEvent[] = [];
    const err = await failure(
      client(s.url, { onRetry: (e) => events.push(e) }).complete({ messages: history, tools }),
    );
    expect(err.code).toBe('LLM_QUERY_ERROR');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('HTTP 400');
    expect(err.message).toContain('Invalid tool_choice value');
    expect(s.requests).toHaveLength(1);
    expect(events).toEqual([]);
  });

  it('reads FastAPI-style and plain-text error bodies too', async () => {
    const s = await start([
      {
        kind: 'http_error',
        status: 422,
        body: { detail: [{ loc: ['body', 'messages'], msg: 'field required' }] },
      },
      { kind: 'http_error', status: 404, body: 'no such route' },
    ]);
    const c = client(s.url);
    const e422 = await failure(c.complete({ messages: history, tools }));
    expect(e422.message).toContain('field required');
    const e404 = await failure(c.complete({ messages: history, tools }));
    expect(e404.message).toContain('no such route');
  });

  it("maps SGLang's context-length 400 to LLM_CONTEXT_OVERFLOW, not retried", async () => {
    const s = await start([{ kind: 'context_overflow', inputTokens: 140_000, contextLength: 131_072 }]);
    const err = await failure(client(s.url).complete({ messages: history, tools }));
    expect(err.code).toBe('LLM_CONTEXT_OVERFLOW');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(
      "The input (140000 tokens) is longer than the model's context length (131072 tokens).",
    );
    expect(s.requests).toHaveLength(1);
  });

  it('recognises the OpenAI-shaped overflow error', async () => {
    const s = await start([
      {
        kind: 'http_error',
        status: 400,
        body: {
          error: {
            message:
              "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens.",
            type: 'invalid_request_error',
            code: 'context_length_exceeded',
          },
        },
      },
    ]);
    const err = await failure(client(s.url).complete({ messages: history, tools }));
    expect(err.code).toBe('LLM_CONTEXT_OVERFLOW');
  });

  it('knows the overflow wordings', () => {
    expect(
      isContextOverflowMessage("The input (5 tokens) is longer than the model's context length (4 tokens)."),
    ).toBe(true);
    expect(
      isContextOverflowMessage(
        "Requested token count exceeds the model's maximum context length of 131072 tokens",
      ),
    ).toBe(true);
    expect(isContextOverflowMessage('error code: context_length_exceeded')).toBe(true);
    expect(isContextOverflowMessage('Invalid tool_choice')).toBe(false);
  });

  it('throws LLM_UNREACHABLE with the URL and the launch command when no server listens', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/v1`;
    const events: RetryEvent[] = [];
    const err = await failure(
      client(url, { maxRetries: 2, onRetry: (e) => events.push(e) }).complete({ messages: history, tools }),
    );
    expect(err.code).toBe('LLM_UNREACHABLE');
    expect(err.retryable).toBe(true);
    expect(err.message).toContain(url);
    expect(err.message).toContain(SGLANG_LAUNCH_HINT);
    expect(err.message).toContain('3 attempts');
    expect(events.map((e) => e.kind)).toEqual(['connection', 'connection']);
  });

  it('retries a timeout, then fails with a retryable LLM_QUERY_ERROR', async () => {
    const s = await start([
      { kind: 'final', content: 'late', delayMs: 5_000 },
      { kind: 'final', content: 'late', delayMs: 5_000 },
    ]);
    const events: RetryEvent[] = [];
    const err = await failure(
      client(s.url, { requestTimeoutMs: 100, maxRetries: 1, onRetry: (e) => events.push(e) }).complete({
        messages: history,
        tools,
      }),
    );
    expect(err.code).toBe('LLM_QUERY_ERROR');
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('did not answer within 100 ms');
    expect(events.map((e) => e.kind)).toEqual(['timeout']);
    expect(s.requests).toHaveLength(2);
  });

  it('rejects a body that is not JSON, without retrying', async () => {
    const s = await start([
      { kind: 'garbage', body: '<html>502 Bad Gateway</html>' },
      { kind: 'final', content: 'x' },
    ]);
    const err = await failure(client(s.url).complete({ messages: history, tools }));
    expect(err.code).toBe('LLM_QUERY_ERROR');
    expect(err.message).toContain('not JSON');
    expect(err.message).toContain('502 Bad Gateway');
    expect(s.requests).toHaveLength(1);
  });

  it('rejects a completion without choices', async () => {
    const s = await start([{ kind: 'no_choices' }]);
    const err = await failure(client(s.url).complete({ messages: history, tools }));
    expect(err.code).toBe('LLM_QUERY_ERROR');
    expect(err.message).toContain('no choices');
  });

  it('rejects a completion with a malformed tool call', async () => {
    const s = await start([
      {
        kind: 'garbage',
        body: JSON.stringify({ choices: [{ message: { content: null, tool_calls: [{ function: {} }] } }] }),
      },
    ]);
    const err = await failure(client(s.url).complete({ messages: history, tools }));
    expect(err.code).toBe('LLM_QUERY_ERROR');
    expect(err.message).toContain('tool_calls');
  });
});

describe('createSglangClient cancellation', () => {
  it('throws CANCELLED without a request when the signal is already aborted', async () => {
    const s = await start([{ kind: 'final', content: 'x' }]);
    const err = await failure(
      client(s.url).complete({ messages: history, tools, signal: AbortSignal.abort() }),
    );
    expect(err.code).toBe('CANCELLED');
    expect(s.requests).toHaveLength(0);
  });

  it('throws CANCELLED when aborted while the server is generating', async () => {
    const s = await start([{ kind: 'final', content: 'slow', delayMs: 30_000 }]);
    const controller = new AbortController();
    const pending = client(s.url).complete({ messages: history, tools, signal: controller.signal });
    await vi.waitFor(() => expect(s.requests).toHaveLength(1), { timeout: 5_000, interval: 5 });
    controller.abort();
    const err = await failure(pending);
    expect(err.code).toBe('CANCELLED');
  });

  it('throws CANCELLED when aborted during a backoff sleep', async () => {
    const s = await start([
      { kind: 'http_error', status: 500 },
      { kind: 'final', content: 'x' },
    ]);
    const controller = new AbortController();
    const err = await failure(
      client(s.url, {
        retryBaseDelayMs: 60_000,
        maxRetryDelayMs: 60_000,
        onRetry: () => controller.abort(),
      }).complete({
        messages: history,
        tools,
        signal: controller.signal,
      }),
    );
    expect(err.code).toBe('CANCELLED');
    expect(s.requests).toHaveLength(1);
  });

  it('leaves no abort listener on the loop signal after each request (150 requests, no warning)', async () => {
    const turns = 150;
    const s = await start(Array.from({ length: turns }, () => ({ kind: 'final', content: 'ok' }) as const));
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w);
    };
    process.on('warning', onWarning);
    try {
      const controller = new AbortController();
      const c = client(s.url);
      const before = getEventListeners(controller.signal, 'abort').length;
      const counts: number[] = [];
      for (let i = 0; i < turns; i++) {
        await c.complete({ messages: history, tools, signal: controller.signal });
        counts.push(getEventListeners(controller.signal, 'abort').length);
      }
      // Let a warning emitted on process.nextTick arrive before asserting.
      await new Promise((resolve) => setImmediate(resolve));
      expect(s.requests).toHaveLength(turns);
      expect(new Set(counts)).toEqual(new Set([before]));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('listModels', () => {
  it('lists the served model ids', async () => {
    const s = await start([]);
    expect(await listModels(s.url)).toEqual([MODEL]);
    expect(s.modelListRequests).toBe(1);
  });

  it('throws LLM_UNREACHABLE with the launch command when no server listens', async () => {
    const url = `http://127.0.0.1:${await freePort()}/v1`;
    const err = await failure(listModels(url));
    expect(err.code).toBe('LLM_UNREACHABLE');
    expect(err.message).toContain(url);
    expect(err.message).toContain(SGLANG_LAUNCH_HINT);
  });
});

describe('normalizeBaseURL', () => {
  it('appends /v1 only to a bare server URL', () => {
    expect(normalizeBaseURL('http://sglang:30000')).toBe('http://sglang:30000/v1');
    expect(normalizeBaseURL('http://sglang:30000/')).toBe('http://sglang:30000/v1');
    expect(normalizeBaseURL('http://sglang:30000/v1/')).toBe('http://sglang:30000/v1');
    expect(normalizeBaseURL('https://proxy/llm/v1')).toBe('https://proxy/llm/v1');
  });

  it('rejects what is not an http(s) URL', () => {
    expect(() => normalizeBaseURL('sglang:30000')).toThrow(/http/);
    expect(() => normalizeBaseURL('not a url')).toThrow(AppError);
    expect(() => normalizeBaseURL('http://user:secret@sglang:30000/v1')).toThrow(/credentials/);
  });
});
