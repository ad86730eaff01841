import { AppError, type ErrorCode, type ErrorDetails } from '../app-error.js';
import type { ChatMessage, FinishReason, Usage } from '../llm/chat-model.js';

/**
 * Why a Leaf trajectory ended. Same names as the reference harness's exit reasons:
 * - `agent`: the model answered without tool calls (its final message);
 * - `max_turns`: the step cap (default 150) was reached;
 * - `max_time`: the wall-clock cap (default 10 800 s) passed;
 * - `max_context_len`: the context (prompt + completion tokens, from usage) reached the cap
 *   (default 131 072 tokens), or the server refused the input as too long;
 * - `max_tokens_per_turn`: one completion hit the per-turn cap (finish_reason `length`);
 * - `llm_query_error`: the model server failed (after the client's retries);
 * - `tool_error`: a tool could not be executed at all (the sandbox died), not a tool's own error
 *   observation;
 * - `cancelled`: the AbortSignal fired (label removed, issue closed, shutdown).
 */
export type ExitReason =
  | 'agent'
  | 'max_turns'
  | 'max_time'
  | 'max_context_len'
  | 'max_tokens_per_turn'
  | 'llm_query_error'
  | 'tool_error'
  | 'cancelled';

/** One tool call of a step and its observation. */
export interface TrajectoryToolCall {
  id: string;
  name: string;
  /** The raw arguments string the model sent. */
  arguments: string;
  observation: string;
  /** Time spent executing the tool, in milliseconds. */
  durationMs: number;
}

/** One step: one model request and the tool calls it asked for. */
export interface TrajectoryStep {
  /** 1-based step number. */
  index: number;
  /** ISO 8601 time the request was sent. */
  startedAt: string;
  /** Model latency of this step, in milliseconds. */
  llmMs: number;
  /** Tool time of this step, in milliseconds. */
  toolMs: number;
  finishReason: FinishReason;
  usage: Usage | null;
  /** True when tool calls were recovered from qwen3_coder XML text. */
  recoveredToolCalls?: boolean;
  toolCalls: TrajectoryToolCall[];
}

/**
 * A trajectory file (JSON), written after every step so that a crash leaves a partial trajectory.
 * `version` changes when the shape changes incompatibly.
 */
export interface Trajectory {
  version: 1;
  jobId: string;
  model: string;
  /** ISO 8601 start time. */
  startedAt: string;
  /** Whole history, append-only, exactly as sent to the model (plus the last assistant message). */
  messages: ChatMessage[];
  /** Tool schemas sent with every request. */
  tools: unknown[];
  steps: TrajectoryStep[];
  /** `null` while the loop is still running. */
  exitReason: ExitReason | null;
  /**
   * Error message when the loop ended by an error or was stopped (`llm_query_error`, `tool_error`,
   * `cancelled`, `max_time`; `max_context_len` when the server refused the input as too long).
   */
  error: string | null;
  /**
   * The {@link AppError} that error was, kept whole so that the outcome is classified from its code
   * and details, never from the message (see {@link loopFailure}): its code (`LLM_UNREACHABLE`,
   * `SANDBOX_GONE`, `CANCELLED`, `TIMED_OUT`…), its `details` (an HTTP status, who cancelled) and
   * whether it was retryable.
   */
  errorCode?: ErrorCode;
  errorDetails?: ErrorDetails[ErrorCode];
  errorRetryable?: boolean;
  /** The model's final message (`content` of the last assistant message), when there is one. */
  finalMessage: string | null;
  /** Context size in tokens at the last step (prompt + completion tokens of the last usage). */
  contextTokens: number;
  /** Total prompt + completion tokens over all steps. */
  totalTokens: { prompt: number; completion: number };
  /** Wall-clock time of the loop so far, in milliseconds. */
  elapsedMs: number;
  /**
   * `git diff --binary` of the workspace against the starting commit (empty string when nothing
   * changed; `null` until the loop has ended).
   */
  patch: string | null;
}

/**
 * A trajectory before its first step: what the agent loop starts with and what a journal's `start`
 * line is read back as (`observability/trajectory-journal.ts`), so the two cannot drift apart.
 */
export function newTrajectory(start: {
  jobId: string;
  model: string;
  /** ISO 8601 start time. */
  startedAt: string;
  messages: ChatMessage[];
  tools: unknown[];
}): Trajectory {
  return {
    version: 1,
    ...start,
    steps: [],
    exitReason: null,
    error: null,
    finalMessage: null,
    contextTokens: 0,
    totalTokens: { prompt: 0, completion: 0 },
    elapsedMs: 0,
    patch: null,
  };
}

/**
 * Record `err` as the error a trajectory ended with (`error`, `errorCode`, `errorDetails`,
 * `errorRetryable`).
 */
export function recordLoopError(trajectory: Trajectory, err: AppError): void {
  trajectory.error = err.message;
  trajectory.errorCode = err.code;
  if (err.details === undefined) delete trajectory.errorDetails;
  else trajectory.errorDetails = err.details;
  if (err.retryable) trajectory.errorRetryable = true;
  else delete trajectory.errorRetryable;
}

/**
 * The error that stops the job after this loop, or `null` when its patch goes on to verification
 * (an `agent` answer, or a step, context or per-turn token cap reached). For `cancelled`,
 * `llm_query_error`, `tool_error` and `max_time` it is the AppError the loop recorded, with its
 * code, message, details and `retryable` (a `CANCELLED` one names who cancelled in `details.by`),
 * so `classifyError` reads the same code the model client or the sandbox threw.
 *
 * A trajectory of an older version without `errorCode` gets the code the loop used to imply:
 * `SANDBOX_GONE` for `tool_error`, `CANCELLED` (by no one) for `cancelled`, `TIMED_OUT` for
 * `max_time`, else `LLM_QUERY_ERROR`.
 */
export function loopFailure(trajectory: Trajectory): AppError | null {
  const reason = trajectory.exitReason;
  if (reason === null || !Object.hasOwn(FAILED_EXITS, reason)) return null;
  const code: ErrorCode = trajectory.errorCode ?? FAILED_EXITS[reason as keyof typeof FAILED_EXITS];
  return new AppError(code, trajectory.error ?? 'the agent loop failed', {
    retryable: trajectory.errorRetryable ?? false,
    details: trajectory.errorDetails,
  });
}

/** The exit reasons after which the job stops, each with the code an older trajectory implies. */
const FAILED_EXITS = {
  cancelled: 'CANCELLED',
  llm_query_error: 'LLM_QUERY_ERROR',
  tool_error: 'SANDBOX_GONE',
  max_time: 'TIMED_OUT',
} as const satisfies Partial<Record<ExitReason, ErrorCode>>;
