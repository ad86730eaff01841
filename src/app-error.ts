/**
 * The one error base of FrogNano bot. Every error that crosses a module boundary is an `AppError`
 * (or is wrapped into one by `pipeline/outcome.ts`, the single place where errors are classified).
 *
 * - `code` is a stable, machine-readable identifier, one of {@link ErrorCode}; logs, metrics and the
 *   status comment key on it, never on `message`.
 * - `retryable` says whether running the same job again may succeed (a network blip: yes; an invalid
 *   config: no). The queue uses it to decide between a retry and a final failure.
 * - `details` are non-secret facts for logs and for the outcome, typed per code by
 *   {@link ErrorDetails}.
 */

/**
 * Every error code of FrogNano bot. Adding one here without classifying it in
 * `pipeline/outcome.ts` (`classifyError`) fails the typecheck.
 */
export type ErrorCode =
  // The job as a whole.
  | 'CANCELLED'
  | 'TIMED_OUT'
  | 'INTERNAL'
  // Configuration and policy.
  | 'CONFIG_INVALID'
  | 'POLICY_REFUSED'
  // GitHub and git.
  | 'GITHUB_API_ERROR'
  | 'BRANCH_MOVED'
  | 'CLONE_FAILED'
  | 'GIT_FAILED'
  | 'PATCH_DOES_NOT_APPLY'
  | 'PATCH_FAILED'
  // The model server.
  | 'LLM_UNREACHABLE'
  | 'LLM_QUERY_ERROR'
  | 'LLM_CONTEXT_OVERFLOW'
  // The sandbox and the agent's tools.
  | 'SANDBOX_UNAVAILABLE'
  | 'SANDBOX_GONE'
  | 'SANDBOX_EXEC_FAILED'
  | 'SANDBOX_COPY_FAILED'
  | 'SANDBOX_AGENT_ERROR'
  | 'SANDBOX_PROTOCOL_VIOLATION'
  | 'EGRESS_PROBE_FAILED'
  | 'EGRESS_NOT_BLOCKED'
  | 'TOOL_ERROR'
  // The queue.
  | 'QUEUE_UNAVAILABLE'
  | 'QUEUE_CONTENDED'
  | 'RETRYABLE_OUTCOME'
  | 'WORKER_LOST'
  | 'FOLLOW_UP_UNAVAILABLE'
  // Run records and trajectories.
  | 'RECORD_KEY_INVALID'
  | 'RECORD_NOT_FOUND'
  | 'RECORD_LOCK_TIMEOUT'
  | 'RECORD_STORE_UNAVAILABLE'
  | 'TRAJECTORY_NOT_FOUND'
  // Evaluation (`frognano-bot eval`).
  | 'TASKS_INVALID'
  | 'TASKS_UNREADABLE'
  | 'REPO_NOT_FOUND';

/** Details of a failed model request: the server's URL, its last HTTP status, the attempts made. */
export interface LlmFailureDetails {
  baseURL: string;
  /** The last HTTP status, absent when no response came (connection refused, timeout). */
  status?: number;
  /** Requests made, retries included (set once the client gave up retrying). */
  attempts?: number;
}

/**
 * The `details` each {@link ErrorCode} carries (`undefined`: none). A site may always leave
 * `details` out; what it gives must have this shape.
 */
export interface ErrorDetails {
  /** `by`: login of who cancelled (removed the label, closed the issue), `null` when no person did (shutdown). */
  CANCELLED: { by: string | null };
  TIMED_OUT: undefined;
  INTERNAL: undefined;
  /**
   * `messages`: one line per problem, listed in the status comment; `source`: the file or
   * variable set that was read; `variable`: the one environment variable that is wrong.
   */
  CONFIG_INVALID: { messages?: string[]; source?: string; variable?: string };
  /** A push refused: the branch, and for a branch someone else owns its last commit and author. */
  POLICY_REFUSED: { branch: string; sha?: string; authorEmail?: string };
  /**
   * A follow-up round's push refused because the pull request's branch moved: the branch, the head
   * the round started from, the head found (`null` when only the refused push told).
   */
  BRANCH_MOVED: { branch: string; expectedSha: string; actualSha: string | null };
  /**
   * `status`: the HTTP status, absent when no response came; `pullNumber`/`pullUrl`: the pull
   * request when it existed before the call that failed; `issues`: why an answer was unreadable.
   */
  GITHUB_API_ERROR: { status?: number; pullNumber?: number; pullUrl?: string; issues?: string[] };
  CLONE_FAILED: undefined;
  /** `exitCode`: git's, `null` when a signal ended it; `stderr`: its last 20 lines. */
  GIT_FAILED: { args: string[]; exitCode: number | null; stderr: string };
  PATCH_DOES_NOT_APPLY: undefined;
  PATCH_FAILED: undefined;
  LLM_UNREACHABLE: LlmFailureDetails;
  /** From the SGLang client, or from a replay model (`source` file, `recorded` assistant messages). */
  LLM_QUERY_ERROR: LlmFailureDetails | { source: string; recorded: number };
  LLM_CONTEXT_OVERFLOW: LlmFailureDetails;
  /**
   * `pod`: the Kubernetes pod; `reason`: Kubernetes' reason (`ErrImagePull`, `Unschedulable`…);
   * `status`: the Kubernetes API's HTTP status; `enforced`: the local driver's limits and whether
   * this host enforces each.
   */
  SANDBOX_UNAVAILABLE: { pod?: string; reason?: string; status?: number; enforced?: object };
  /** `reason`: why the pod died (Kubernetes); `stderr`: the last 2000 characters bubblewrap wrote. */
  SANDBOX_GONE: { reason?: string; stderr?: string };
  /** `pod`: the Kubernetes pod; `errno`: the agent's error name (`ENOENT`…). */
  SANDBOX_EXEC_FAILED: { pod?: string; errno?: string };
  /** The archive that did not arrive whole: its size in bytes and SHA-256 (hex). */
  SANDBOX_COPY_FAILED: { size: number; sha256: string };
  SANDBOX_AGENT_ERROR: undefined;
  SANDBOX_PROTOCOL_VIOLATION: undefined;
  EGRESS_PROBE_FAILED: undefined;
  /** `reached`: the probe targets a TCP connection reached from inside; `driver`: the sandbox driver. */
  EGRESS_NOT_BLOCKED: { reached: string[]; driver: string };
  TOOL_ERROR: undefined;
  QUEUE_UNAVAILABLE: undefined;
  QUEUE_CONTENDED: undefined;
  RETRYABLE_OUTCOME: undefined;
  WORKER_LOST: undefined;
  FOLLOW_UP_UNAVAILABLE: undefined;
  RECORD_KEY_INVALID: undefined;
  RECORD_NOT_FOUND: undefined;
  RECORD_LOCK_TIMEOUT: undefined;
  RECORD_STORE_UNAVAILABLE: undefined;
  TRAJECTORY_NOT_FOUND: undefined;
  /** `problems`: one message per bad line of the tasks file. */
  TASKS_INVALID: { problems: string[] };
  TASKS_UNREADABLE: undefined;
  REPO_NOT_FOUND: undefined;
}

/** Options of an {@link AppError}: `retryable` defaults to `false`. */
export interface AppErrorOptions<C extends ErrorCode> {
  retryable?: boolean;
  cause?: unknown;
  details?: ErrorDetails[C];
}

export class AppError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly retryable: boolean;
  /** Extra, non-secret facts for logs (never tokens or keys), shaped by {@link ErrorDetails}. */
  readonly details: ErrorDetails[C] | undefined;

  constructor(code: C, message: string, options: AppErrorOptions<C> = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = options.details;
  }
}

/**
 * An {@link AppError} of one of the codes `C`, as a union with one member per code, so that a
 * `switch (err.code)` narrows `err.details` to that code's {@link ErrorDetails}.
 */
export type AppErrorOf<C extends ErrorCode = ErrorCode> = { [K in C]: AppError<K> }[C];

/** True when `err` is an {@link AppError} (with the given code: its `details` are that code's). */
export function isAppError<C extends ErrorCode = ErrorCode>(err: unknown, code?: C): err is AppErrorOf<C> {
  return err instanceof AppError && (code === undefined || err.code === code);
}

/**
 * The error an aborted signal stands for. Every abort site of FrogNano bot aborts with an AppError
 * as the reason (the worker: `CANCELLED` with `details.by`, on a cancel request or at shutdown;
 * `run`: `CANCELLED` on SIGINT; the agent loop's clock: `TIMED_OUT`), and that reason is returned
 * as it is. Any other reason (an `abort()` without one gives a DOMException `AbortError`) becomes
 * an AppError `CANCELLED` by no one, with the reason as its cause.
 *
 * @param signal an aborted signal.
 */
export function abortReason(signal: AbortSignal): AppError {
  const reason: unknown = signal.reason;
  if (reason instanceof AppError) return reason;
  return new AppError('CANCELLED', 'the job was cancelled', { cause: reason, details: { by: null } });
}

/**
 * Throw {@link abortReason} when `signal` has aborted; the AbortSignal counterpart of
 * `signal.throwIfAborted()` that always throws an AppError.
 *
 * @throws AppError the signal's reason (`CANCELLED`, `TIMED_OUT`), when it has aborted.
 */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

/**
 * Whether a failed HTTP call (GitHub, the Kubernetes API) is worth another try, from its status.
 *
 * - 5xx (the server failed) and 429 (rate limited): retryable.
 * - any other status (4xx: bad request, not found, forbidden…): not retryable, the same call fails
 *   the same way again.
 * - `undefined` (no status at all): retryable. A missing status means the call got no HTTP response
 *   (connection refused or reset, DNS failure, timeout), a network error that a later try may not hit.
 *
 * The model server's client keeps its own retry loop (it also retries 408); this is the rule for
 * everything else.
 *
 * @param status the HTTP status code of the response, or `undefined` when there was none.
 */
export function isRetryableHttpStatus(status: number | undefined): boolean {
  return status === undefined || status >= 500 || status === 429;
}

/**
 * The HTTP status of a failed call's error, when it carries a numeric `status` (Octokit's
 * `RequestError`, https://github.com/octokit/request-error.js; the Kubernetes client's `ApiException`
 * has `code` instead); `undefined` when it has none (no response came).
 */
export function httpStatusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}
