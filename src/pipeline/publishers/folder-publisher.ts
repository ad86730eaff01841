import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { applyPatch } from '../../git/apply-patch.js';
import { filesInPatch } from '../../leaf/workspace-patch.js';
import type { JobContext } from '../job-context.js';
import type { Outcome } from '../outcome.js';
import type { TestRun } from '../run-tests.js';
import type { CandidateState } from '../steps/candidate-state.js';
import type { ChosenCandidate } from '../steps/choose-candidate.js';
import type { TestComparison } from '../verification/compare-test-runs.js';
import { buildEvidence, testVerdict } from '../verification/evidence-markdown.js';
import type { TamperingReport } from '../verification/test-tampering.js';
import type { FinishedJob, JobPublisher } from './job-publisher.js';

/** What {@link createFolderPublisher} writes to, and what it adds to `summary.json`. */
export interface FolderPublisherOptions {
  /** The output folder (created when missing). */
  outDir: string;
  /** The exit code a command gives for an outcome, written into `summary.json` as `exitCode`. */
  exitCodeOf: (outcome: Outcome) => number;
  /** When the run started (for `elapsedMs`). */
  startedAt: Date;
  /** Extra facts for `summary.json` (e.g. which model answered). */
  extra?: Record<string, unknown>;
}

/**
 * The publisher of `frognano-bot run`: no pull request, an output folder instead. `publish`
 * stages the chosen patch in the checkout (what `--keep` leaves) and ends as `patch_ready`
 * (flagged when the tests were tampered with) or `tests_failing`; `finish` writes, for every
 * outcome, `summary.json` and — once an agent ran — `patch.diff` and `trajectory.json`.
 *
 * `summary.json` carries the same base/head comparison as a pull request body, as objects, not
 * text (see {@link FolderSummary}).
 */
export function createFolderPublisher(options: FolderPublisherOptions): JobPublisher<unknown> {
  return {
    async publish(ctx, job, chosen): Promise<Outcome> {
      await applyPatch(job.dir, chosen.patch, { signal: ctx.signal });
      return localOutcome(chosen, options.outDir);
    },
    async finish(ctx, finished) {
      await mkdir(options.outDir, { recursive: true });
      const shown = finished.chosen?.state ?? finished.candidates.find((c) => c.trajectory);
      if (shown?.trajectory) {
        await writeFile(
          join(options.outDir, 'trajectory.json'),
          `${JSON.stringify(shown.trajectory, null, 2)}\n`,
        );
      }
      if (finished.candidates.length > 0) {
        await writeFile(join(options.outDir, 'patch.diff'), shown?.trajectory?.patch ?? '');
      }
      const summary = folderSummary(ctx, finished, shown, options);
      await writeFile(join(options.outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    },
  };
}

/** `summary.json` of `frognano-bot run`. Units in the names; `null` where a fact does not exist. */
export interface FolderSummary {
  jobId: string;
  /** How the run ended: the {@link Outcome}'s kind and its message, reason or details. */
  outcome: { kind: Outcome['kind']; message: string | null; details: string[] };
  /** The command's exit code for this outcome (README, "frognano-bot run"). */
  exitCode: number;
  exitReason: string | null;
  error: string | null;
  steps: number;
  tokens: { prompt: number; completion: number };
  contextTokens: number | null;
  filesChanged: string[];
  elapsedMs: number;
  tests: TestFacts | null;
  baseTests: TestFacts | null;
  /** Base → head, per test (or per suite), as the pull request's table shows it. */
  comparison: TestComparison | null;
  /** The table's one-sentence verdict. */
  verdict: string | null;
  tampering: TamperingReport | null;
  /** The warnings a pull request would carry (tampering first, broken tests). */
  warnings: string[];
  /** Patches a check refused (protected path, patch limits, secret). */
  refusals: Array<{ candidate: number; check: string; reason: string; details: string[] }>;
  /** The choice between candidates (with one candidate, its one row). */
  candidates: {
    chosen: number | null;
    reason: string;
    rows: Array<{ candidate: number; chosen: boolean; result: string }>;
  } | null;
  finalMessage: string | null;
  out: string;
  [extra: string]: unknown;
}

/** A test run in `summary.json`: the command, how it ended, the last 15 lines of its output. */
export interface TestFacts {
  command: string;
  source: string;
  exitCode: number | null;
  passed: boolean;
  timedOut: boolean;
  outputTail: string;
}

function folderSummary(
  ctx: JobContext,
  finished: FinishedJob<unknown>,
  shown: CandidateState | undefined,
  options: FolderPublisherOptions,
): FolderSummary {
  const t = shown?.trajectory;
  const verified =
    finished.chosen?.verified ?? (shown?.verified && !shown.verified.refused ? shown.verified : undefined);
  const evidence = verified
    ? buildEvidence({
        comparison: verified.comparison,
        base: verified.baseTests,
        head: verified.tests,
        tampering: verified.tampering,
        choice: null,
      })
    : null;
  return {
    jobId: ctx.jobId,
    outcome: outcomeFacts(finished.outcome),
    exitCode: options.exitCodeOf(finished.outcome),
    exitReason: t?.exitReason ?? null,
    error: t?.error ?? null,
    steps: t?.steps.length ?? 0,
    tokens: t?.totalTokens ?? { prompt: 0, completion: 0 },
    contextTokens: t?.contextTokens ?? null,
    filesChanged: filesInPatch(t?.patch ?? ''),
    elapsedMs: ctx.now().getTime() - options.startedAt.getTime(),
    ...options.extra,
    tests: testFacts(verified?.tests ?? null),
    baseTests: testFacts(verified?.baseTests ?? null),
    comparison: verified?.comparison ?? null,
    verdict: verified?.comparison ? testVerdict(verified.comparison) : null,
    tampering: verified?.tampering ?? null,
    warnings: evidence?.warnings ?? [],
    refusals: finished.candidates.flatMap((c) =>
      c.verified?.refused
        ? [
            {
              candidate: c.names.candidate,
              check: c.verified.check,
              reason: c.verified.reason,
              details: c.verified.details,
            },
          ]
        : [],
    ),
    candidates: finished.choice
      ? {
          chosen: finished.choice.winner?.candidate ?? null,
          reason: finished.choice.reason,
          rows: finished.choice.rows,
        }
      : null,
    finalMessage: t?.finalMessage ?? null,
    out: options.outDir,
    ...(ctx.keepWorkspace && finished.job ? { checkout: finished.job.dir } : {}),
  };
}

function outcomeFacts(o: Outcome): FolderSummary['outcome'] {
  const message = 'message' in o ? o.message : 'reason' in o ? o.reason : null;
  const details = o.kind === 'refused' ? (o.details ?? []) : [];
  return { kind: o.kind, message, details };
}

function testFacts(run: TestRun | null): TestFacts | null {
  if (!run) return null;
  const { command, source, exitCode, passed, timedOut } = run;
  return {
    command,
    source,
    exitCode,
    passed,
    timedOut,
    outputTail: run.outputTail.split('\n').slice(-15).join('\n').trim(),
  };
}

/**
 * How a job published to a local folder ends (`run`, `eval run`): `tests_failing` when its tests
 * count as failing, else `patch_ready`, flagged when the tampering check flagged it.
 */
export function localOutcome(chosen: ChosenCandidate, folder: string): Outcome {
  const { patch, summary, verified } = chosen;
  if (chosen.testsFailing) return { kind: 'tests_failing', patch, summary };
  return { kind: 'patch_ready', patch, folder, flagged: verified.tampering.flagged, summary };
}
