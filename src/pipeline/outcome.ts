import {
  AppError,
  httpStatusOf,
  isAppError,
  isRetryableHttpStatus,
  type AppErrorOf,
  type ErrorCode,
} from '../app-error.js';
import type { Clamp } from '../config/policy.js';
import type { ExitReason } from '../leaf/trajectory.js';

/**
 * How a job ended. A discriminated union on `kind`: the status comment, the metrics (`jobs_total{outcome}`)
 * and the exit code of `frognano-bot run` all read it. Every job ends in exactly one outcome.
 *
 * Summary fields shared by the kinds that ran the agent live in {@link RunSummary}.
 */
export type Outcome =
  | {
      kind: 'pr_opened';
      pullNumber: number;
      pullUrl: string;
      updated: boolean;
      summary: RunSummary;
      /** What failed after the pull request existed but does not stop it (label, review request). */
      warnings?: string[];
    }
  | { kind: 'no_change'; summary: RunSummary }
  | {
      /**
       * The change passed every check and its tests and was written to a folder (`frognano-bot run`)
       * instead of a pull request.
       */
      kind: 'patch_ready';
      patch: string;
      /** The output folder (`patch.diff`, `trajectory.json`, `summary.json`). */
      folder: string;
      /** The test-tampering check flagged the change: it modifies tests in a way a person must judge. */
      flagged: boolean;
      summary: RunSummary;
    }
  | {
      kind: 'tests_failing';
      /** The patch (`git diff`), shown collapsed in the comment when no pull request was opened. */
      patch: string;
      /** Set when policy allowed a draft pull request despite failing tests. */
      pullNumber?: number;
      pullUrl?: string;
      summary: RunSummary;
      warnings?: string[];
    }
  | {
      kind: 'llm_unreachable';
      message: string;
      /** The model server's last HTTP status, when it answered with errors rather than not at all. */
      status?: number;
      summary?: RunSummary;
    }
  | {
      kind: 'sandbox_failed';
      message: string;
      /**
       * `protocol`: the sandbox broke its protocol (a forged, oversized or late reply from inside),
       * so it was destroyed and nothing it reported was used; absent: it failed or could not start.
       */
      cause?: 'protocol';
      summary?: RunSummary;
    }
  | { kind: 'timed_out'; message: string; summary?: RunSummary }
  | { kind: 'cancelled'; by: string | null; reason: string; summary?: RunSummary }
  | {
      kind: 'refused';
      reason: string;
      details?: string[];
      /**
       * `patch`: the agent ran and a check refused its change (protected path, patch limits, secret);
       * `branch`: a follow-up round's change was ready but the pull request's branch moved while it
       * ran, so nothing was pushed; absent: the job was refused before it ran (permission, policy,
       * configuration).
       */
      stage?: 'patch' | 'branch';
      summary?: RunSummary;
    }
  | {
      kind: 'github_error';
      message: string;
      status?: number;
      retryable: boolean;
      /** The pull request, when it had been opened before the call that failed. */
      pullRequest?: PullRequestRef;
    }
  | { kind: 'failed'; code: ErrorCode; message: string; retryable: boolean; summary?: RunSummary };

/** A pull request that exists (number and `html_url`). */
export interface PullRequestRef {
  number: number;
  url: string;
}

/** The kinds of {@link Outcome}, for metrics labels. */
export type OutcomeKind = Outcome['kind'];

/** Facts about an agent run that every outcome after the loop reports. Units are in the names. */
export interface RunSummary {
  jobId: string;
  exitReason: ExitReason | null;
  steps: number;
  maxSteps: number;
  promptTokens: number;
  completionTokens: number;
  elapsedMs: number;
  /** The model's final message (untrusted model output). */
  finalMessage: string | null;
  /** `git diff --stat`-style summary of the patch, if any. */
  diffstat?: string;
  /** Test command and result, when tests ran. */
  tests?: {
    command: string;
    exitCode: number | null;
    passed: boolean;
    outputTail: string;
    timedOut: boolean;
    /** One sentence comparing the base and the patched tree (fixed, broken…), when both ran. */
    verdict?: string;
  };
  /** With best-of-N: which attempt this summary is of, out of how many. */
  attempt?: { number: number; of: number };
  /**
   * The step and time caps the loop ran under, each with where its value came from (an
   * `EffectivePolicy.sources` value: `default`, `policy:defaults`, `policy:rule[i] (glob)`, `org`,
   * `repo`), so a run stopped at a cap can say which setting stopped it.
   */
  caps?: { maxSteps: PolicyCap; maxTimeSec: PolicyCap };
  /** Repository values lowered to the admin caps (the status comment shows them with `describeClamp`). */
  clamps?: Clamp[];
}

/** One cap of a run: its value (steps, or seconds for `maxTimeSec`) and the policy layer that set it. */
export interface PolicyCap {
  value: number;
  source: string;
}

/** What {@link classifyError} knows besides the error. */
export interface ClassifyContext {
  /** The run summary gathered before the error, when the agent ran. */
  summary?: RunSummary;
}

/**
 * The one place where errors become an {@link Outcome} (DESIGN.md: "outcome.ts, the one place where
 * errors become an outcome"). Every {@link ErrorCode} maps to its kind in one exhaustive switch
 * ({@link classifyAppError}); an abort reason that is not an AppError (a DOMException
 * `AbortError`) is `cancelled` by no one; Octokit's `HttpError` is `github_error`; anything else is
 * `failed` with code `INTERNAL` and is not retryable.
 *
 * A cancelled job is classified from its signal's reason: `classifyError(signal.aborted ?
 * signal.reason : err, { summary })`, so who cancelled comes from the reason's `details.by`.
 *
 * @param err anything thrown by the pipeline, or the reason of its aborted signal.
 * @param context the run summary gathered before the error, when the agent ran.
 */
export function classifyError(err: unknown, context: ClassifyContext = {}): Outcome {
  const summary = context.summary;
  if (isAppError(err)) return classifyAppError(err, summary);
  if (err instanceof Error && err.name === 'AbortError') {
    // An abort() without a reason: nobody named a cause (our abort sites all give an AppError).
    return { kind: 'cancelled', by: null, reason: 'the job was cancelled', summary };
  }
  const status = httpStatusOf(err);
  if (status !== undefined && (err as { name?: string }).name === 'HttpError') {
    // Octokit's RequestError (https://github.com/octokit/request-error.js): 5xx and 429 are worth a retry.
    return {
      kind: 'github_error',
      message: (err as Error).message,
      status,
      retryable: isRetryableHttpStatus(status),
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { kind: 'failed', code: 'INTERNAL', message, retryable: false, summary };
}

/**
 * The outcome of each {@link ErrorCode}. Exhaustive: a code added to the union without a case here
 * fails the typecheck (the `never` in `default`).
 */
function classifyAppError(err: AppErrorOf, summary: RunSummary | undefined): Outcome {
  const failed = (): Outcome => ({
    kind: 'failed',
    code: err.code,
    message: err.message,
    retryable: err.retryable,
    summary,
  });
  switch (err.code) {
    case 'CANCELLED':
      return { kind: 'cancelled', by: err.details?.by ?? null, reason: err.message, summary };
    case 'LLM_UNREACHABLE':
      return { kind: 'llm_unreachable', message: err.message, summary };
    case 'LLM_QUERY_ERROR': {
      // The model server answered, with an error (5xx after every retry, a 4xx): its outcome, with
      // the last status from the client's details.
      const status = err.details && 'status' in err.details ? err.details.status : undefined;
      return { kind: 'llm_unreachable', message: err.message, ...(status ? { status } : {}), summary };
    }
    case 'SANDBOX_PROTOCOL_VIOLATION':
      return { kind: 'sandbox_failed', cause: 'protocol', message: err.message, summary };
    case 'SANDBOX_UNAVAILABLE':
    case 'SANDBOX_GONE':
    case 'SANDBOX_EXEC_FAILED':
    case 'SANDBOX_COPY_FAILED':
    case 'EGRESS_NOT_BLOCKED':
      return { kind: 'sandbox_failed', message: err.message, summary };
    case 'TIMED_OUT':
      return { kind: 'timed_out', message: err.message, summary };
    case 'CONFIG_INVALID':
      return { kind: 'refused', reason: err.message, details: err.details?.messages };
    case 'POLICY_REFUSED':
      return { kind: 'refused', reason: err.message, details: undefined };
    case 'BRANCH_MOVED':
      return { kind: 'refused', reason: err.message, stage: 'branch', summary };
    case 'GITHUB_API_ERROR': {
      const { status, pullNumber, pullUrl } = err.details ?? {};
      return {
        kind: 'github_error',
        message: err.message,
        status,
        retryable: err.retryable,
        ...(pullNumber !== undefined && pullUrl !== undefined
          ? { pullRequest: { number: pullNumber, url: pullUrl } }
          : {}),
      };
    }
    // Failures without an outcome of their own: `failed`, with the code.
    case 'INTERNAL':
    case 'CLONE_FAILED':
    case 'GIT_FAILED':
    case 'PATCH_DOES_NOT_APPLY':
    case 'PATCH_FAILED':
    case 'LLM_CONTEXT_OVERFLOW':
    case 'SANDBOX_AGENT_ERROR':
    case 'EGRESS_PROBE_FAILED':
    case 'TOOL_ERROR':
    case 'QUEUE_UNAVAILABLE':
    case 'QUEUE_CONTENDED':
    case 'RETRYABLE_OUTCOME':
    case 'WORKER_LOST':
    case 'FOLLOW_UP_UNAVAILABLE':
    case 'RECORD_KEY_INVALID':
    case 'RECORD_NOT_FOUND':
    case 'RECORD_LOCK_TIMEOUT':
    case 'RECORD_STORE_UNAVAILABLE':
    case 'TRAJECTORY_NOT_FOUND':
    case 'TASKS_INVALID':
    case 'TASKS_UNREADABLE':
    case 'REPO_NOT_FOUND':
      return failed();
    default: {
      const unclassified: never = err;
      throw new Error(`unclassified error code ${(unclassified as AppError).code}`);
    }
  }
}

/**
 * BullMQ's reason for failing a job that stalled (its worker stopped renewing the lock: crashed, was
 * killed, lost Redis) more than `maxStalledCount` times. BullMQ exports no class or constant for it:
 * its `moveStalledJobsToWait` Lua script stores this text as the job's deferred failure and the next
 * worker fails the job with an `UnrecoverableError` carrying it (bullmq 6.7). A unit test checks the
 * installed BullMQ still writes it.
 */
export const BULLMQ_STALLED_REASON = 'stalled more than allowable limit';

/**
 * The outcome of a job the queue gave up on (the worker's `failed` event once the job will not run
 * again): the error its last run threw, or the one BullMQ failed it with.
 *
 * - stalled too often ({@link BULLMQ_STALLED_REASON}): `failed` with code `WORKER_LOST`;
 * - an AppError `GITHUB_API_ERROR`: `github_error` with its `details.status` and `retryable`;
 * - any other error: `failed` with its AppError code (else `INTERNAL`), not retryable — the queue
 *   already stopped retrying.
 */
export function classifyQueueFailure(err: Error): Outcome {
  if (err.message.includes(BULLMQ_STALLED_REASON)) {
    return {
      kind: 'failed',
      code: 'WORKER_LOST',
      message:
        'the worker running this job stopped (crashed, was killed or lost Redis) more times than allowed',
      retryable: false,
    };
  }
  if (err instanceof AppError && err.code === 'GITHUB_API_ERROR') {
    const status = typeof err.details?.status === 'number' ? err.details.status : undefined;
    return { kind: 'github_error', message: err.message, status, retryable: err.retryable };
  }
  return {
    kind: 'failed',
    code: err instanceof AppError ? err.code : 'INTERNAL',
    message: err.message,
    retryable: false,
  };
}
