import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { AppError } from '../../app-error.js';
import { ENV_DOCS } from '../../config/env.js';
import { formatTranscript } from '../../leaf/transcript.js';
import type { Trajectory } from '../../leaf/trajectory.js';
import { createTrajectoryStore } from '../../observability/trajectory-store.js';
import { jobFilesDir } from './record-files.js';

const USAGE = `usage: frognano-bot trajectory <job id | trajectory.json | trajectory.jsonl> [--candidate N] [--dir DIR] [--lines N] [--json]

Prints a stored trajectory as a readable transcript. DIR defaults to $TRAJECTORY_DIR, else
${defaultTrajectoryDir()} (the worker's default). A job that ran several candidates (best-of-N) keeps
each one: without --candidate the chosen candidate is printed, with --candidate N candidate N.
(--attempt N, the option's former name, still works.)
For \`frognano-bot run\`, pass its file: trajectory frognano-run/trajectory.json
While a job runs (or after it crashed) its steps are in trajectory.jsonl, which is read the same way.`;

/** The worker's TRAJECTORY_DIR default, so both look in the same place. */
function defaultTrajectoryDir(): string {
  return ENV_DOCS.find((d) => d.name === 'TRAJECTORY_DIR')?.default ?? 'trajectories';
}

/**
 * `candidates.json` of a best-of-N job (written by the pipeline; `attempts.json`, whose rows name the
 * candidate `attempt`, in jobs stored before the rename); only what this command shows.
 */
const candidateRowSchema = z.union([
  z.object({ candidate: z.number().int(), chosen: z.boolean(), result: z.string() }),
  z
    .object({ attempt: z.number().int(), chosen: z.boolean(), result: z.string() })
    .transform(({ attempt, ...row }) => ({ candidate: attempt, ...row })),
]);
const candidatesSummarySchema = z.object({
  chosen: z.number().int().nullable(),
  reason: z.string(),
  rows: z.array(candidateRowSchema),
});

/** `frognano-bot trajectory`: print a stored trajectory. */
export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        dir: { type: 'string' },
        lines: { type: 'string', default: '6' },
        json: { type: 'boolean', default: false },
        candidate: { type: 'string' },
        /** The former name of --candidate, kept so scripts that use it go on working. */
        attempt: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [id] = parsed.positionals;
  const lines = Number(parsed.values.lines);
  const asked = parsed.values.candidate ?? parsed.values.attempt;
  const candidate = asked === undefined ? undefined : Number(asked);
  if (
    !id ||
    !Number.isInteger(lines) ||
    lines < 1 ||
    (candidate !== undefined && (!Number.isInteger(candidate) || candidate < 1))
  ) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (candidate !== undefined && /\.jsonl?$/.test(id)) {
    process.stderr.write(
      `frognano-bot trajectory: --candidate needs a job id (candidates are stored per job); ${id} is one file\n`,
    );
    return 2;
  }
  const localDir = parsed.values.dir ?? process.env.TRAJECTORY_DIR ?? defaultTrajectoryDir();
  // Not on this disk (another worker ran it): the copy in the record store.
  const store = createTrajectoryStore({
    dir: id.endsWith('.json') ? localDir : await jobFilesDir(id, localDir),
  });
  let data: Trajectory;
  if (candidate !== undefined) {
    try {
      data = (await loadCandidate(store, id, candidate)) as Trajectory;
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'TRAJECTORY_NOT_FOUND')) throw err;
      const stored = await storedCandidates(store.jobDir(id));
      throw new AppError(
        'TRAJECTORY_NOT_FOUND',
        stored.length > 0
          ? `job ${id} has no candidate ${candidate}; stored candidates: ${stored.join(', ')}`
          : `job ${id} has no per-candidate trajectories (it ran one candidate: leave out --candidate)`,
      );
    }
  } else {
    try {
      data = (await store.load(id)) as Trajectory;
    } catch (err) {
      // A best-of-N job with no chosen candidate has only its candidate files.
      const stored =
        err instanceof AppError && err.code === 'TRAJECTORY_NOT_FOUND' && !/\.jsonl?$/.test(id)
          ? await storedCandidates(store.jobDir(id))
          : [];
      if (stored.length === 0) throw err;
      throw new AppError(
        'TRAJECTORY_NOT_FOUND',
        `job ${id} has no chosen candidate; print one of its candidates with --candidate N (stored: ${stored.join(', ')})`,
      );
    }
  }
  if (!data || typeof data !== 'object' || !Array.isArray(data.steps) || !Array.isArray(data.messages)) {
    process.stderr.write(`frognano-bot trajectory: ${id} is not a trajectory file\n`);
    return 1;
  }
  if (parsed.values.json) {
    process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
    return 0;
  }
  const header = /\.jsonl?$/.test(id) ? null : await candidatesHeader(store.jobDir(id), candidate);
  process.stdout.write(
    `${header ? `${header}\n\n` : ''}${formatTranscript(data, { maxObservationLines: lines })}`,
  );
  return 0;
}

/** A candidate's trajectory: `candidate-<n>.json`, else (a job stored before the rename) `attempt-<n>.json`. */
async function loadCandidate(
  store: ReturnType<typeof createTrajectoryStore>,
  id: string,
  n: number,
): Promise<unknown> {
  try {
    return await store.load(store.trajectoryPath(id, `candidate-${n}`));
  } catch (err) {
    if (!(err instanceof AppError && err.code === 'TRAJECTORY_NOT_FOUND')) throw err;
    return store.load(store.trajectoryPath(id, `attempt-${n}`));
  }
}

/** Candidate numbers with a `candidate-<n>.json` (or older `attempt-<n>.json`) in the job's folder, ascending. */
async function storedCandidates(jobDir: string): Promise<number[]> {
  const names = await readdir(jobDir).catch(() => [] as string[]);
  const numbers = names
    .map((n) => /^(?:candidate|attempt)-(\d+)\.json$/.exec(n)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number);
  return [...new Set(numbers)].sort((a, b) => a - b);
}

/**
 * For a best-of-N job: which candidate is printed, whether it was chosen and why, and how to print
 * the others. `null` for a job with one candidate.
 */
async function candidatesHeader(jobDir: string, candidate: number | undefined): Promise<string | null> {
  const text = await readFile(join(jobDir, 'candidates.json'), 'utf8').catch(() =>
    readFile(join(jobDir, 'attempts.json'), 'utf8').catch(() => null),
  );
  if (text === null) return null;
  let summary;
  try {
    summary = candidatesSummarySchema.safeParse(JSON.parse(text));
  } catch {
    return null;
  }
  if (!summary.success || summary.data.rows.length < 2) return null;
  const { chosen, reason, rows } = summary.data;
  const shown = candidate ?? chosen;
  const lines = [
    shown === null
      ? `No candidate was chosen (${rows.length} candidates). ${reason}`
      : `Candidate ${shown} of ${rows.length}${shown === chosen ? ' (chosen)' : ''}. ${reason}`,
    ...rows.map((r) => `  candidate ${r.candidate}${r.chosen ? ' (chosen)' : ''}: ${r.result}`),
    'Print another with --candidate N.',
  ];
  return lines.join('\n');
}
