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
