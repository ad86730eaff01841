import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { abortReason, AppError, isAppError, throwIfAborted } from '../app-error.js';
import { LEAF_PROTOCOL } from '../protocol/protocol.js';
import { createSilentLogger, type Logger } from '../observability/logger.js';
import type {
  AssistantMessage,
  ChatModel,
  ChatRequest,
  ChatResponse,
  ToolCall,
  Usage,
} from './chat-model.js';
import {
  generateToolCallId,
  hasQwen3CoderToolCallMarkup,
  recoverQwen3CoderToolCalls,
} from './qwen3-coder-xml.js';

/**
 * Client for SGLang's OpenAI-compatible chat completions endpoint
 * (`POST {baseURL}/chat/completions`, https://docs.sglang.ai/basic_usage/openai_api_completions.html),
 * built on the `openai` npm package (v6). One non-streaming request per Leaf step.
 *
 * Retries live in one place: this module's own loop, with the SDK's retries turned off
 * (`maxRetries: 0`). The SDK's loop has a fixed 0.5 s base delay, ignores `retry-after` above 60 s
 * without a bound we choose, and its sleep cannot be cancelled by the job's AbortSignal; ours has
 * a configurable base, a cap that also bounds `retry-after`, an abortable sleep, and reports each
 * retry (`onRetry`, log line) so that tests assert the chosen delays without timing anything.
 */

/** The command shown when no model server answers. */
export const SGLANG_LAUNCH_HINT =
  'python -m sglang.launch_server --model-path microsoft/FrogNano-4B-2609 --reasoning-parser qwen3 --tool-call-parser qwen3_coder';

/** Default retries after the first attempt. */
export const DEFAULT_MAX_RETRIES = 4;
/** Default per-attempt timeout in milliseconds: long, since one step may generate 8 192 tokens. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 600_000;
/** Default first backoff delay in milliseconds (then doubled per retry, with jitter). */
export const DEFAULT_RETRY_BASE_DELAY_MS = 1_000;
/** Default cap on one backoff delay and on an honoured `retry-after`, in milliseconds. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 30_000;

/** One retry decision, reported through {@link SglangClientOptions.onRetry} and logged. */
export interface RetryEvent {
  /** 1-based number of the attempt that failed. */
  attempt: number;
  /** Delay before the next attempt, in milliseconds. */
  delayMs: number;
  /** `connection`, `timeout` or `http`. */
  kind: 'connection' | 'timeout' | 'http';
  /** HTTP status when `kind` is `http`. */
  status?: number;
  /** True when `delayMs` came from a `retry-after` / `retry-after-ms` header. */
  fromRetryAfter: boolean;
}

/** Options of {@link createSglangClient}. */
export interface SglangClientOptions {
  /**
   * Server URL, e.g. `http://sglang:30000/v1`. A URL without a path (`http://sglang:30000`) gets
   * `/v1` appended; any other path is used as given (a proxy may mount the API elsewhere).
   */
  baseURL: string;
  /** Model name sent in every request (SGLang's `--served-model-name`, default its model path). */
  model: string;
  /** Bearer token when SGLang runs with `--api-key`; default none (the SDK then sends `EMPTY`). */
  apiKey?: string;
  /** Retries after the first attempt, on connection errors, timeouts, 408, 429 and 5xx. Default 4. */
  maxRetries?: number;
  /** Timeout of one attempt until the response headers arrive, in milliseconds. Default 600 000. */
  requestTimeoutMs?: number;
  logger?: Logger;
  /** First backoff delay in milliseconds; attempt n waits base·2^(n-1) with ±25 % jitter. Default 1 000. */
  retryBaseDelayMs?: number;
  /** Cap on one delay, including an honoured `retry-after`, in milliseconds. Default 30 000. */
  maxRetryDelayMs?: number;
  /** Overrides `max_completion_tokens` (tokens per step); default the Leaf value (8 192). */
  maxCompletionTokens?: number;
  /** Called before each retry sleep (metrics, tests). */
  onRetry?: (event: RetryEvent) => void;
}

/**
 * Create a {@link ChatModel} that talks to SGLang.
 *
 * Every request body carries `model`, `messages` (the history exactly as given, `reasoning_content`
 * included), `tools` (as given) and the Leaf request defaults from protocol.json:
 * `temperature`, `top_p`, `top_k`, `min_p`, `repetition_penalty`, `chat_template_kwargs`,
 * `max_completion_tokens`, `tool_choice`, `parallel_tool_calls`. The non-OpenAI fields (`top_k`,
 * `min_p`, `repetition_penalty`, `chat_template_kwargs`) are sent as ordinary body fields: the SDK
 * sends unknown body fields as they are ("Undocumented request params" in its README).
 *
 * When the response has no `tool_calls` but its text holds qwen3_coder XML (`<function=`), the
 * calls are recovered (see qwen3-coder-xml.ts), `recoveredToolCalls` is set and a `stop` finish
 * reason becomes `tool_calls`.
 *
 * `complete` throws {@link AppError}:
 * - `LLM_CONTEXT_OVERFLOW` (not retryable, not retried) when the server refused the input as too
 *   long (SGLang: "The input (N tokens) is longer than the model's context length (M tokens).";
 *   others: "maximum context length", "context_length_exceeded");
 * - `LLM_UNREACHABLE` (retryable) when connections failed on every attempt; the message names the
 *   URL and the command that starts a server;
 * - `LLM_QUERY_ERROR` for an HTTP error (retryable for 408/429/5xx after the retries ran out, not
 *   for other statuses, which are not retried), timeouts on every attempt (retryable), and a body
 *   that is not a chat completion (not retryable);
 * - the signal's reason (`abortReason`: `CANCELLED`…) when `request.signal` aborts, also during a
 *   backoff sleep.
 *
 * @throws AppError `CONFIG_INVALID` at creation when `baseURL` is not an http(s) URL or carries
 *   credentials (`user:pass@`).
 */
export function createSglangClient(options: SglangClientOptions): ChatModel {
  const baseURL = normalizeBaseURL(options.baseURL);
  const logger = options.logger ?? createSilentLogger();
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const baseDelayMs = options.retryBaseDelayMs ?? DEFAULT_RETRY_BASE_DELAY_MS;
  const maxDelayMs = options.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS;
  const defaults = LEAF_PROTOCOL.request_defaults;
  const client = createOpenAI(baseURL, options.apiKey, timeoutMs);
  let warnedRecovery = false;

  async function completeOnce(request: ChatRequest): Promise<ChatResponse> {
    const body = {
      model: options.model,
      messages: request.messages,
      tools: request.tools,
      temperature: defaults.temperature,
      top_p: defaults.top_p,
      top_k: defaults.top_k,
      min_p: defaults.min_p,
      repetition_penalty: defaults.repetition_penalty,
      chat_template_kwargs: { enable_thinking: defaults.chat_template_kwargs.enable_thinking },
      max_completion_tokens: options.maxCompletionTokens ?? defaults.max_completion_tokens,
      tool_choice: defaults.tool_choice,
      parallel_tool_calls: defaults.parallel_tool_calls,
    };
    // The SDK adds an abort listener to the signal it is given and never removes it; handing it a
    // per-request signal keeps the loop's signal at one listener of ours, removed when we finish.
    const link = linkAbort(request.signal);
    try {
      const response = await client.chat.completions
        .create(body as unknown as ChatCompletionCreateParamsNonStreaming, {
          signal: link.signal,
          timeout: timeoutMs,
          maxRetries: 0,
        })
        .asResponse();
      const text = await response.text();
      return toChatResponse(parseCompletion(text, response.status, baseURL), request.tools);
    } finally {
      link.unlink();
    }
  }

  function toChatResponse(completion: Completion, tools: readonly unknown[]): ChatResponse {
    const choice = completion.choices[0] as Completion['choices'][number];
    const m = choice.message;
    let message: AssistantMessage = { role: 'assistant', content: m.content ?? null };
    if (m.reasoning_content !== undefined) message.reasoning_content = m.reasoning_content;
    const toolCalls = (m.tool_calls ?? []).map(toToolCall);
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    let finishReason = choice.finish_reason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
    let recoveredToolCalls = false;
    if (
      toolCalls.length === 0 &&
      (hasQwen3CoderToolCallMarkup(m.content) || hasQwen3CoderToolCallMarkup(m.reasoning_content))
    ) {
      const recovered = recoverQwen3CoderToolCalls(message, tools);
      if (recovered.recovered) {
        message = recovered.message;
        recoveredToolCalls = true;
        if (finishReason === 'stop') finishReason = 'tool_calls';
        const fields = { count: message.tool_calls?.length, baseURL };
        if (!warnedRecovery) {
          warnedRecovery = true;
          logger.warn(
            fields,
            'recovered tool calls from qwen3_coder XML text; is the server started with --tool-call-parser qwen3_coder?',
          );
        } else {
          logger.debug(fields, 'recovered tool calls from qwen3_coder XML text');
        }
      }
    }
    const result: ChatResponse = { message, finishReason, usage: toUsage(completion.usage) };
    if (typeof completion.id === 'string') result.id = completion.id;
    if (recoveredToolCalls) result.recoveredToolCalls = true;
    return result;
  }

  return {
    model: options.model,
    async complete(request: ChatRequest): Promise<ChatResponse> {
      const signal = request.signal;
      throwIfAborted(signal);
      for (let attempt = 1; ; attempt++) {
        const started = Date.now();
        try {
          const response = await completeOnce(request);
          logger.debug(
            { attempt, ms: Date.now() - started, finishReason: response.finishReason, usage: response.usage },
            'chat completion',
          );
          return response;
        } catch (err) {
          throwIfAborted(signal);
          const failure = classify(err, baseURL);
          if (failure.kind === 'final') throw failure.error;
          if (attempt > maxRetries) throw exhaustedError(failure, attempt, baseURL, timeoutMs);
          const fromRetryAfter = failure.retryAfterMs !== undefined;
          const delayMs = fromRetryAfter
            ? Math.min(failure.retryAfterMs as number, maxDelayMs)
            : backoffDelay(attempt, baseDelayMs, maxDelayMs);
          const event: RetryEvent = { attempt, delayMs, kind: failure.kind, fromRetryAfter };
          if (failure.status !== undefined) event.status = failure.status;
          logger.warn({ ...event, baseURL, error: failure.message }, 'model request failed; retrying');
          options.onRetry?.(event);
          await sleep(delayMs, signal);
        }
      }
    },
  };
}

/**
 * List the model ids a server serves (`GET {baseURL}/models`), for `doctor` and for `run`'s
 * "does a server answer" check. One attempt, no retries.
 *
 * @param baseURL as for {@link createSglangClient} (`/v1` appended when the URL has no path).
 * @param options.timeoutMs timeout in milliseconds, default 10 000.
 * @throws AppError `LLM_UNREACHABLE` (with the launch command) when no server answered;
 *   `LLM_QUERY_ERROR` on an HTTP error, a timeout or a body that is not a model list;
 *   the signal's reason (`abortReason`: `CANCELLED`…) when `options.signal` aborted; `CONFIG_INVALID` for a bad URL.
 */
export async function listModels(
  baseURL: string,
  apiKey?: string,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<string[]> {
  const url = normalizeBaseURL(baseURL);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const client = createOpenAI(url, apiKey, timeoutMs);
  throwIfAborted(options.signal);
  let text: string;
  let status: number;
  try {
    const response = await client.models
      .list({ signal: options.signal ?? null, timeout: timeoutMs, maxRetries: 0 })
      .asResponse();
    status = response.status;
    text = await response.text();
  } catch (err) {
    throwIfAborted(options.signal);
    const failure = classify(err, url);
    if (failure.kind === 'final') throw failure.error;
    throw exhaustedError(failure, 1, url, timeoutMs);
  }
  const list = parseServerBody(text, modelListSchema, {
    notJson: `The model server at ${url} answered GET /models with a body that is not JSON (HTTP ${status})`,
    invalid: `The model server at ${url} answered GET /models with an unexpected body`,
  });
  return list.data.map((m) => m.id);
}

const modelListSchema = z.object({ data: z.array(z.object({ id: z.string() })) });

/**
 * The part of SGLang's chat completion response that Leaf reads (OpenAI shape plus SGLang's
 * `reasoning_content`). Unknown fields are ignored. `arguments` may come as an object from some
 * servers; it is turned into a JSON string.
 */
const completionSchema = z.object({
  id: z.string().nullish(),
  choices: z
    .array(
      z.object({
        message: z.object({
          role: z.string().nullish(),
          content: z.string().nullish(),
          reasoning_content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().nullish(),
                type: z.string().nullish(),
                function: z.object({
                  name: z.string().min(1),
                  arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
                }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1, 'the response has no choices'),
  usage: z
    .object({
      prompt_tokens: z.number().int().nonnegative(),
      completion_tokens: z.number().int().nonnegative(),
      total_tokens: z.number().int().nonnegative().nullish(),
    })
    .nullish(),
});
type Completion = z.infer<typeof completionSchema>;

function parseCompletion(text: string, status: number, baseURL: string): Completion {
  return parseServerBody(text, completionSchema, {
    notJson: `The model server at ${baseURL} returned a body that is not JSON (HTTP ${status})`,
    invalid: `The model server at ${baseURL} returned something that is not a chat completion`,
  });
}

/**
 * A model server's response body as JSON checked by `schema`.
 *
 * @throws AppError `LLM_QUERY_ERROR`: `messages.notJson` with an excerpt of the body, or
 *   `messages.invalid` with zod's description of what does not fit.
 */
function parseServerBody<T>(
  text: string,
  schema: z.ZodType<T>,
  messages: { notJson: string; invalid: string },
): T {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AppError('LLM_QUERY_ERROR', `${messages.notJson}: ${excerpt(text)}`, { cause: err });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new AppError('LLM_QUERY_ERROR', `${messages.invalid}: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

function toToolCall(
  call: NonNullable<Completion['choices'][number]['message']['tool_calls']>[number],
): ToolCall {
  const args = call.function.arguments;
  return {
    id: call.id ?? generateToolCallId(),
    type: 'function',
    function: {
      name: call.function.name,
      arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
    },
  };
}

function toUsage(usage: Completion['usage']): Usage | null {
  if (!usage) return null;
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens,
  };
}

/** Phrases servers use when the input does not fit the context window (matched lower-case). */
const CONTEXT_OVERFLOW_PATTERNS = [
  "longer than the model's context length", // SGLang, vLLM (older)
  'maximum context length', // OpenAI, vLLM, SGLang ("exceeds the model's maximum context length")
  'context_length_exceeded', // OpenAI error code
];

/** True when an error message says the input does not fit the model's context window. */
export function isContextOverflowMessage(message: string): boolean {
  const lower = message.toLowerCase();
  return CONTEXT_OVERFLOW_PATTERNS.some((p) => lower.includes(p));
}

type Failure =
  | { kind: 'final'; error: AppError }
  | {
      kind: 'connection' | 'timeout' | 'http';
      message: string;
      status?: number;
      retryAfterMs?: number;
      cause: unknown;
    };

/** Sort a failed attempt into "give up now" or "may retry". */
function classify(err: unknown, baseURL: string): Failure {
  if (isAppError(err)) return { kind: 'final', error: err };
  if (err instanceof APIConnectionTimeoutError) {
    return { kind: 'timeout', message: err.message, cause: err };
  }
  if (err instanceof APIConnectionError) {
    const cause = (err as { cause?: unknown }).cause;
    const detail = describeCause(cause);
    return { kind: 'connection', message: detail ? `${err.message} (${detail})` : err.message, cause: err };
  }
  if (err instanceof APIUserAbortError) {
    return {
      kind: 'final',
      error: new AppError('CANCELLED', 'The model request was cancelled.', { cause: err }),
    };
  }
  if (err instanceof APIError && typeof err.status === 'number') {
    const status = err.status;
    const serverMessage = errorMessageOf(err);
    if (isContextOverflowMessage(serverMessage) || (err.code as unknown) === 'context_length_exceeded') {
      return {
        kind: 'final',
        error: new AppError(
          'LLM_CONTEXT_OVERFLOW',
          `The model server refused the input as too long: ${serverMessage}`,
          {
            cause: err,
            details: { status, baseURL },
          },
        ),
      };
    }
    if (status === 408 || status === 429 || status >= 500) {
      const failure: Failure = { kind: 'http', status, message: serverMessage, cause: err };
      const retryAfterMs = parseRetryAfter(err.headers);
      if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
      return failure;
    }
    return {
      kind: 'final',
      error: new AppError(
        'LLM_QUERY_ERROR',
        `The model server at ${baseURL} answered HTTP ${status}: ${serverMessage}`,
        {
          cause: err,
          details: { status, baseURL },
        },
      ),
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return {
    kind: 'final',
    error: new AppError('LLM_QUERY_ERROR', `The model request to ${baseURL} failed: ${message}`, {
      cause: err,
    }),
  };
}

/** The error after the last attempt of a retryable failure. */
function exhaustedError(
  failure: Exclude<Failure, { kind: 'final' }>,
  attempts: number,
  baseURL: string,
  timeoutMs: number,
): AppError {
  const tries = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
  const details = { baseURL, attempts, status: failure.status };
  switch (failure.kind) {
    case 'connection':
      return new AppError(
        'LLM_UNREACHABLE',
        `No model server answered at ${baseURL} (${tries}; last error: ${failure.message}). ` +
          `Start one with: ${SGLANG_LAUNCH_HINT} (and point the model URL at it, e.g. http://HOST:30000/v1).`,
        { retryable: true, cause: failure.cause, details },
      );
    case 'timeout':
      return new AppError(
        'LLM_QUERY_ERROR',
        `The model server at ${baseURL} did not answer within ${timeoutMs} ms (${tries}).`,
        { retryable: true, cause: failure.cause, details },
      );
    case 'http':
      return new AppError(
        'LLM_QUERY_ERROR',
        `The model server at ${baseURL} answered HTTP ${failure.status} (${tries}): ${failure.message}`,
        { retryable: true, cause: failure.cause, details },
      );
  }
}

/** The server's own error text: SGLang's `message`, OpenAI's `error.message`, or the SDK's text. */
function errorMessageOf(err: APIError): string {
  const body = err.error as { message?: unknown } | undefined;
  const message = typeof body?.message === 'string' ? body.message : err.message;
  return excerpt(message);
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return '';
  const inner = (cause as { cause?: unknown }).cause;
  const code = (inner as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  return inner instanceof Error ? inner.message : cause.message;
}

/**
 * Delay asked for by `retry-after-ms` (milliseconds, OpenAI's header) or `retry-after` (seconds or
 * an HTTP date, RFC 9110 §10.2.3), in milliseconds; `undefined` when absent or unreadable.
 */
export function parseRetryAfter(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms) {
    const value = Number.parseFloat(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const header = headers?.get('retry-after');
  if (!header) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(header)) return Number.parseFloat(header) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Exponential backoff with jitter: base·2^(attempt-1), capped, times a factor in [0.75, 1.25). */
export function backoffDelay(attempt: number, baseDelayMs: number, maxDelayMs: number): number {
  const exponential = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
  return Math.min(maxDelayMs, Math.round(exponential * (0.75 + Math.random() * 0.5)));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      if (signal) reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A signal that aborts when `parent` does, for one request; `unlink()` removes the listener put on
 * `parent`, so a long-lived signal does not collect one listener per request.
 */
function linkAbort(parent: AbortSignal | undefined): { signal: AbortSignal | null; unlink: () => void } {
  if (parent === undefined) return { signal: null, unlink: () => undefined };
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, unlink: () => undefined };
  }
  const onAbort = (): void => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return { signal: controller.signal, unlink: () => parent.removeEventListener('abort', onAbort) };
}

function excerpt(text: string, max = 500): string {
  const oneLine = text.trim();
  return oneLine.length > max ? `${oneLine.slice(0, max)}…` : oneLine;
}

/**
 * `http://host:port` → `http://host:port/v1`; other paths as given, without a trailing slash.
 * @throws AppError `CONFIG_INVALID` for a URL that is not http(s) or that carries credentials.
 */
export function normalizeBaseURL(baseURL: string): string {
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch (err) {
    throw new AppError('CONFIG_INVALID', `The model URL "${baseURL}" is not a valid URL.`, { cause: err });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AppError('CONFIG_INVALID', `The model URL "${baseURL}" must start with http:// or https://.`);
  }
  if (url.username !== '' || url.password !== '') {
    // Keeps the key out of logs and error messages, which name the URL.
    throw new AppError(
      'CONFIG_INVALID',
      'The model URL must not contain credentials; pass the API key separately.',
    );
  }
  let path = url.pathname.replace(/\/+$/, '');
  if (path === '') path = '/v1';
  return `${url.origin}${path}`;
}

/**
 * The SDK client, with its retries off and every OPENAI_* environment default neutralised (the
 * on-prem server must never receive an OpenAI key found in the environment).
 */
function createOpenAI(baseURL: string, apiKey: string | undefined, timeoutMs: number): OpenAI {
  return new OpenAI({
    baseURL,
    apiKey: apiKey ?? 'EMPTY',
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    maxRetries: 0,
    timeout: timeoutMs,
    logLevel: 'off',
    fetch: fetchWithOpenAIErrorShape,
  });
}

/**
 * SGLang (and FastAPI's validation errors) put the error at the top level of the body
 * (`{"object":"error","message":…,"code":400}`, `{"detail":…}`); the SDK reads the message only from
 * `{"error":{…}}` and otherwise reports "400 status code (no body)". For error statuses this
 * wraps such bodies into the OpenAI shape so that the server's words (needed to recognise a
 * context overflow) reach the error.
 */
async function fetchWithOpenAIErrorShape(
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  const response = await fetch(input, init);
  if (response.ok) return response;
  const text = await response.text();
  let body = text;
  try {
    const json: unknown = JSON.parse(text);
    if (typeof json === 'object' && json !== null && !Array.isArray(json) && !('error' in json)) {
      const record = json as Record<string, unknown>;
      if (typeof record.message === 'string') {
        body = JSON.stringify({ error: record });
      } else if (record.detail !== undefined) {
        const detail = typeof record.detail === 'string' ? record.detail : JSON.stringify(record.detail);
        body = JSON.stringify({ error: { message: detail } });
      }
    }
  } catch {
    // Not JSON: the SDK reports the text itself.
  }
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
