/**
 * The model side of the Leaf loop, as the agent loop sees it. Implemented by the SGLang client
 * (`sglang-client.ts`, OpenAI-compatible chat completions) and by the replay model
 * (`replay-model.ts`, which plays back a recorded trajectory).
 *
 * Message shapes follow the OpenAI chat-completions wire format that SGLang serves
 * (https://docs.sglang.ai/basic_usage/openai_api_completions.html), plus SGLang's
 * `reasoning_content` field on assistant messages (set by `--reasoning-parser qwen3`).
 */

/** A tool call as sent by the model. `arguments` is the raw JSON string the model produced. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface SystemMessage {
  role: 'system';
  content: string;
}
export interface UserMessage {
  role: 'user';
  content: string;
}
export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  /** Thinking text; kept in history exactly as received (Leaf keeps it). */
  reasoning_content?: string | null;
  tool_calls?: ToolCall[];
}
export interface ToolMessage {
  role: 'tool';
  tool_call_id: string;
  /** The observation string. */
  content: string;
}
export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** Token usage of one request, as reported by the server. Units: tokens. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** `finish_reason` values of the OpenAI wire format; `length` means the per-turn token cap was hit. */
export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'abort' | (string & {});

/** One completed step of the model. */
export interface ChatResponse {
  message: AssistantMessage;
  finishReason: FinishReason;
  usage: Usage | null;
  /** Server-side id of the completion, when there is one. */
  id?: string;
  /**
   * True when tool calls were recovered from qwen3_coder XML text (the server's parser did not run);
   * a `stop` finish reason is then reported as `tool_calls`, as the server's parser would have.
   */
  recoveredToolCalls?: boolean;
}

/** One request of the loop: the whole history (append-only) and the tool schemas. */
export interface ChatRequest {
  messages: readonly ChatMessage[];
  /** Tool schemas exactly as in protocol.json. */
  tools: readonly unknown[];
  signal?: AbortSignal;
}

/**
 * A chat model. `complete` throws {@link AppError} with code
 * - `LLM_CONTEXT_OVERFLOW` (not retryable) when the server refused the input as too long — the loop
 *   ends as `max_context_len`;
 * - `LLM_UNREACHABLE` (retryable) when no server answered after the client's own retries;
 * - `LLM_QUERY_ERROR` for any other failed request (e.g. a 4xx) — the loop ends as `llm_query_error`;
 * - the signal's reason when `signal` aborted (`abortReason` in app-error.ts: the AppError it was
 *   aborted with, `CANCELLED` or the loop's `TIMED_OUT`; else `CANCELLED`).
 */
export interface ChatModel {
  /** Model name for logs and the trajectory. */
  readonly model: string;
  complete(request: ChatRequest): Promise<ChatResponse>;
}
