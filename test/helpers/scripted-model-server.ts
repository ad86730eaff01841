import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for an SGLang server, speaking its OpenAI-compatible wire format over real HTTP on
 * 127.0.0.1: `GET /v1/models`, SGLang's `GET /get_model_info` and non-streaming
 * `POST /v1/chat/completions`. Each chat request is
 * answered by the next scripted turn and its body is recorded, so tests assert what went over the
 * wire.
 *
 * Response shapes follow SGLang's `python/sglang/srt/entrypoints/openai/protocol.py`
 * (`ChatCompletionResponse`, `ErrorResponse`, `ModelList`); the context-length refusal uses the
 * wording of SGLang's tokenizer manager.
 */

/** Token usage override of a turn; missing fields are computed (see {@link startScriptedModelServer}). */
export interface ScriptedUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** A tool call of a scripted turn. `arguments` as an object is JSON-encoded. */
export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown> | string;
  /** Default `call_` + random hex. */
  id?: string;
}

interface TurnBase {
  /** Wait this long (milliseconds) before answering. */
  delayMs?: number;
  /**
   * Answer only once this settles (after `delayMs`): a test holds the agent at a step while it
   * changes the world, without guessing a delay.
   */
  after?: Promise<unknown>;
}
interface MessageTurnBase extends TurnBase {
  /** Thinking text (`reasoning_content`); default absent (null on the wire). */
  reasoning?: string | null;
  usage?: ScriptedUsage;
  /** Overrides the finish_reason the turn kind implies. */
  finishReason?: string;
}

/**
 * One scripted answer.
 * - `tool_calls`: parsed tool calls (the server's `--tool-call-parser` ran); finish `tool_calls`.
 * - `xml_content`: the calls as qwen3_coder XML inside `content`, no `tool_calls` (parser did not
 *   run); `omitOpener` leaves out `<tool_call>`; finish `stop`.
 * - `xml_reasoning`: the same XML inside `reasoning_content`; content `null` unless given.
 * - `final`: an answer without tool calls; finish `stop`.
 * - `length`: output cut by the token cap; finish `length`.
 * - `http_error`: status + body (object → JSON, string → as is) + headers.
 * - `context_overflow`: HTTP 400 in SGLang's wording, "The input (N tokens) is longer than the
 *   model's context length (M tokens)."
 * - `garbage`: a 200 whose body is the given text (e.g. invalid JSON).
 * - `no_choices`: a well-formed completion with `choices: []`.
 */
export type ScriptedTurn =
  | (MessageTurnBase & { kind: 'tool_calls'; calls: ScriptedToolCall[]; content?: string | null })
  | (MessageTurnBase & {
      kind: 'xml_content';
      calls: Array<Omit<ScriptedToolCall, 'id'>>;
      /** Text before the XML. */
      before?: string;
      omitOpener?: boolean;
    })
  | (MessageTurnBase & {
      kind: 'xml_reasoning';
      calls: Array<Omit<ScriptedToolCall, 'id'>>;
      /** Thinking text before the XML. */
      before?: string;
      content?: string | null;
      omitOpener?: boolean;
    })
  | (MessageTurnBase & { kind: 'final'; content: string })
  | (MessageTurnBase & { kind: 'length'; content?: string | null })
  | (TurnBase & { kind: 'http_error'; status: number; body?: unknown; headers?: Record<string, string> })
  | (TurnBase & { kind: 'context_overflow'; inputTokens?: number; contextLength?: number })
  | (TurnBase & { kind: 'garbage'; body: string; contentType?: string })
  | (TurnBase & { kind: 'no_choices' });

type MessageTurn = Extract<
  ScriptedTurn,
  { kind: 'tool_calls' | 'xml_content' | 'xml_reasoning' | 'final' | 'length' }
>;

/** One recorded chat completions request. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body text. */
  rawBody: string;
  /** The parsed JSON body (`undefined` when the body was not JSON). */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read arbitrary fields
}

/** What {@link startScriptedModelServer} returns. */
export interface ScriptedModelServer {
  /** Base URL ending with `/v1`, e.g. `http://127.0.0.1:41234/v1`. */
  url: string;
  /** Every `POST /v1/chat/completions` request, in arrival order (model-list calls not included). */
  requests: RecordedRequest[];
  /** Number of `GET /v1/models` requests. */
  modelListRequests: number;
  /** Stop listening, end open connections (also ones waiting on a delay). */
  close(): Promise<void>;
}

/** Options of {@link startScriptedModelServer}. */
export interface ScriptedModelServerOptions {
  /**
   * The turns, in order (request i gets turn i; a request past the end gets HTTP 400 "script
   * exhausted", which clients do not retry), or a function of the request and its 0-based index.
   */
  script: ScriptedTurn[] | ((request: RecordedRequest, index: number) => ScriptedTurn);
  /** Served model name; default `microsoft/FrogNano-4B-2609`. */
  modelName?: string;
  /** Port on 127.0.0.1; default a free one. */
  port?: number;
}

/**
 * Start the server. Usage defaults: `prompt_tokens` = ⌈characters of the request's messages / 4⌉,
 * `completion_tokens` = ⌈characters of the answer (content + reasoning + tool arguments) / 4⌉ (at
 * least 1), `total_tokens` = their sum; a turn's `usage` overrides any of them.
 */
export async function startScriptedModelServer(
  options: ScriptedModelServerOptions,
): Promise<ScriptedModelServer> {
  const modelName = options.modelName ?? 'microsoft/FrogNano-4B-2609';
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  const state: ScriptedModelServer = {
    url: '',
    requests,
    modelListRequests: 0,
    close: async () => {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, errorBody(`scripted model server failed: ${String(err)}`, 500));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    const path = (req.url ?? '/').split('?')[0] as string;
    if (req.method === 'GET' && path === '/v1/models') {
      state.modelListRequests++;
      sendJson(res, 200, {
        object: 'list',
        data: [
          { id: modelName, object: 'model', created: nowSeconds(), owned_by: 'sglang', root: modelName },
        ],
      });
      return;
    }
    if (req.method === 'GET' && path === '/get_model_info') {
      // SGLang's native model info (docs "SGLang Native APIs": model_path, tokenizer_path,
      // is_generation, preferred_sampling_params, weight_version).
      sendJson(res, 200, {
        model_path: modelName,
        tokenizer_path: modelName,
        is_generation: true,
        preferred_sampling_params: null,
        weight_version: 'default',
      });
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      sendJson(res, 404, errorBody(`scripted model server: no route ${req.method} ${path}`, 404));
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const recorded: RecordedRequest = { method: req.method, path, headers: req.headers, rawBody, body };
    const index = requests.length;
    requests.push(recorded);
    const script = options.script;
    const turn = typeof script === 'function' ? script(recorded, index) : script[index];
    if (turn === undefined) {
      const length = Array.isArray(script) ? script.length : 0;
      sendJson(
        res,
        400,
        errorBody(`scripted model server: script exhausted (request ${index + 1}, ${length} turns)`, 400),
      );
      return;
    }
    if (turn.delayMs !== undefined && turn.delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          resolve();
        }, turn.delayMs);
        timers.add(timer);
      });
      if (closed || res.destroyed) return;
    }
    if (turn.after) {
      await turn.after.catch(() => undefined);
      if (closed || res.destroyed) return;
    }
    answer(res, turn, body);
  }

  function answer(res: ServerResponse, turn: ScriptedTurn, body: unknown): void {
    switch (turn.kind) {
      case 'http_error': {
        const payload =
          typeof turn.body === 'string'
            ? turn.body
            : JSON.stringify(turn.body ?? errorBody('scripted error', turn.status));
        res.writeHead(turn.status, { 'content-type': 'application/json', ...turn.headers });
        res.end(payload);
        return;
      }
      case 'context_overflow': {
        const contextLength = turn.contextLength ?? 131_072;
        const inputTokens = turn.inputTokens ?? contextLength + 1_000;
        sendJson(
          res,
          400,
          errorBody(
            `The input (${inputTokens} tokens) is longer than the model's context length (${contextLength} tokens).`,
            400,
          ),
        );
        return;
      }
      case 'garbage':
        res.writeHead(200, { 'content-type': turn.contentType ?? 'application/json' });
        res.end(turn.body);
        return;
      case 'no_choices':
        sendJson(res, 200, { ...envelope(), choices: [], usage: usageFor(body, '', undefined) });
        return;
      default:
        sendJson(res, 200, completion(turn, body));
    }
  }

  function envelope(): Record<string, unknown> {
    return {
      id: randomBytes(16).toString('hex'),
      object: 'chat.completion',
      created: nowSeconds(),
      model: modelName,
    };
  }

  function completion(turn: MessageTurn, body: unknown): Record<string, unknown> {
    let content: string | null = null;
    let reasoning: string | null = turn.reasoning ?? null;
    let toolCalls: Array<Record<string, unknown>> | null = null;
    let finishReason: string;
    switch (turn.kind) {
      case 'tool_calls':
        content = turn.content ?? null;
        toolCalls = turn.calls.map((call, i) => ({
          id: call.id ?? `call_${randomBytes(12).toString('hex')}`,
          index: i,
          type: 'function',
          function: {
            name: call.name,
            arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
          },
        }));
        finishReason = 'tool_calls';
        break;
      case 'xml_content':
        content = (turn.before ?? '') + turn.calls.map((c) => toQwen3CoderXml(c, turn.omitOpener)).join('\n');
        finishReason = 'stop';
        break;
      case 'xml_reasoning':
        reasoning =
          (turn.before ?? '') + turn.calls.map((c) => toQwen3CoderXml(c, turn.omitOpener)).join('\n');
        content = turn.content ?? null;
        finishReason = 'stop';
        break;
      case 'final':
        content = turn.content;
        finishReason = 'stop';
        break;
      case 'length':
        content = turn.content ?? null;
        finishReason = 'length';
        break;
    }
    const output =
      (content ?? '') + (reasoning ?? '') + (toolCalls ?? []).map((c) => JSON.stringify(c.function)).join('');
    return {
      ...envelope(),
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, reasoning_content: reasoning, tool_calls: toolCalls },
          logprobs: null,
          finish_reason: turn.finishReason ?? finishReason,
          matched_stop: null,
        },
      ],
      usage: usageFor(body, output, turn.usage),
    };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}/v1`;
  return state;
}

/**
 * One tool call as qwen3_coder XML, the way FrogNano-4B writes it (values are written as text:
 * strings as is, other values JSON-encoded).
 */
export function toQwen3CoderXml(
  call: { name: string; arguments: Record<string, unknown> | string },
  omitOpener = false,
): string {
  const args: Record<string, unknown> =
    typeof call.arguments === 'string'
      ? (JSON.parse(call.arguments) as Record<string, unknown>)
      : call.arguments;
  const params = Object.entries(args)
    .map(([k, v]) => `<parameter=${k}>\n${typeof v === 'string' ? v : JSON.stringify(v)}\n</parameter>\n`)
    .join('');
  return `${omitOpener ? '' : '<tool_call>\n'}<function=${call.name}>\n${params}</function>\n</tool_call>`;
}

function usageFor(
  body: unknown,
  output: string,
  override: ScriptedUsage | undefined,
): Record<string, number> {
  const messages = (body as { messages?: unknown } | undefined)?.messages;
  const promptChars = Array.isArray(messages) ? JSON.stringify(messages).length : 0;
  const prompt = override?.prompt_tokens ?? Math.ceil(promptChars / 4);
  const completionTokens = override?.completion_tokens ?? Math.max(1, Math.ceil(output.length / 4));
  return {
    prompt_tokens: prompt,
    completion_tokens: completionTokens,
    total_tokens: override?.total_tokens ?? prompt + completionTokens,
  };
}

/** SGLang's `ErrorResponse` shape (top level, not wrapped in `error`). */
function errorBody(message: string, code: number): Record<string, unknown> {
  return {
    object: 'error',
    message,
    type: code >= 500 ? 'InternalServerError' : 'BadRequestError',
    param: null,
    code,
  };
}

function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
