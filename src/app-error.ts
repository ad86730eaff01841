/**
 * The one error base of FrogNano bot. Every error that crosses a module boundary is an `AppError`
 * (or is wrapped into one by `pipeline/outcome.ts`, the single place where errors are classified).
 *
 * - `code` is a stable, machine-readable identifier (`SANDBOX_UNAVAILABLE`, `LLM_UNREACHABLE`, …);
 *   logs, metrics and the status comment key on it, never on `message`.
 * - `retryable` says whether running the same job again may succeed (a network blip: yes; an invalid
 *   config: no). The queue uses it to decide between a retry and a final failure.
 */
export class AppError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  /** Extra, non-secret facts for logs (never tokens or keys). */
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: string,
    message: string,
    options: { retryable?: boolean; cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = options.details;
  }
}

/** True when `err` is an {@link AppError} with the given code. */
export function isAppError(err: unknown, code?: string): err is AppError {
  return err instanceof AppError && (code === undefined || err.code === code);
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
