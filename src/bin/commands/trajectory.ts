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

const USAGE = `usage: frognano-bot trajectory <job id | trajectory.json | trajectory.jsonl> [--attempt N] [--dir DIR] [--lines N] [--json]

Prints a stored trajectory as a readable transcript. DIR defaults to $TRAJECTORY_DIR, else
${defaultTrajectoryDir()} (the worker's default). A job that ran several attempts (best-of-N) keeps
each one: without --attempt the chosen attempt is printed, with --attempt N attempt N.
For \`frognano-bot run\`, pass its file: trajectory frognano-run/trajectory.json
While a job runs (or after it crashed) its steps are in trajectory.jsonl, which is read the same way.`;

/** The worker's TRAJECTORY_DIR default, so both look in the same place. */
function defaultTrajectoryDir(): string {
  return ENV_DOCS.find((d) => d.name === 'TRAJECTORY_DIR')?.default ?? 'trajectories';
}

/** `attempts.json` of a best-of-N job (written by the pipeline); only what this command shows. */
const attemptsSummarySchema = z.object({
  chosen: z.number().int().nullable(),
  reason: z.string(),
  rows: z.array(z.object({ attempt: z.number().int(), chosen: z.boolean(), result: z.string() })),
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
  const attempt = parsed.values.attempt === undefined ? undefined : Number(parsed.values.attempt);
  if (
    !id ||
    !Number.isInteger(lines) ||
    lines < 1 ||
    (attempt !== undefined && (!Number.isInteger(attempt) || attempt < 1))
  ) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (attempt !== undefined && /\.jsonl?$/.test(id)) {
    process.stderr.write(
      `frognano-bot trajectory: --attempt needs a job id (attempts are stored per job); ${id} is one file\n`,
    );
    return 2;
  }
  const localDir = parsed.values.dir ?? process.env.TRAJECTORY_DIR ?? defaultTrajectoryDir();
  // Not on this disk (another worker ran it): the copy in the record store.
  const store = createTrajectoryStore({
    dir: id.endsWith('.json') ? localDir : await jobFilesDir(id, localDir),
  });
  let data: Trajectory;
  if (attempt !== undefined) {
    try {
      data = (await store.load(store.trajectoryPath(id, `attempt-${attempt}`))) as Trajectory;
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'TRAJECTORY_NOT_FOUND')) throw err;
      const stored = await storedAttempts(store.jobDir(id));
      throw new AppError(
        'TRAJECTORY_NOT_FOUND',
        stored.length > 0
          ? `job ${id} has no attempt ${attempt}; stored attempts: ${stored.join(', ')}`
          : `job ${id} has no per-attempt trajectories (it ran one attempt: leave out --attempt)`,
      );
    }
  } else {
    try {
      data = (await store.load(id)) as Trajectory;
    } catch (err) {
      // A best-of-N job with no chosen attempt has only its attempt files.
      const stored =
        err instanceof AppError && err.code === 'TRAJECTORY_NOT_FOUND' && !/\.jsonl?$/.test(id)
          ? await storedAttempts(store.jobDir(id))
          : [];
      if (stored.length === 0) throw err;
      throw new AppError(
        'TRAJECTORY_NOT_FOUND',
        `job ${id} has no chosen attempt; print one of its attempts with --attempt N (stored: ${stored.join(', ')})`,
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
  const header = /\.jsonl?$/.test(id) ? null : await attemptsHeader(store.jobDir(id), attempt);
  process.stdout.write(
    `${header ? `${header}\n\n` : ''}${formatTranscript(data, { maxObservationLines: lines })}`,
  );
  return 0;
}

/** Attempt numbers with an `attempt-<n>.json` in the job's folder, ascending. */
async function storedAttempts(jobDir: string): Promise<number[]> {
  const names = await readdir(jobDir).catch(() => [] as string[]);
  return names
    .map((n) => /^attempt-(\d+)\.json$/.exec(n)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/**
 * For a best-of-N job: which attempt is printed, whether it was chosen and why, and how to print
 * the others. `null` for a job with one attempt.
 */
async function attemptsHeader(jobDir: string, attempt: number | undefined): Promise<string | null> {
  let summary;
  try {
    summary = attemptsSummarySchema.safeParse(
      JSON.parse(await readFile(join(jobDir, 'attempts.json'), 'utf8')),
    );
  } catch {
    return null;
  }
  if (!summary.success || summary.data.rows.length < 2) return null;
  const { chosen, reason, rows } = summary.data;
  const shown = attempt ?? chosen;
  const lines = [
    shown === null
      ? `No attempt was chosen (${rows.length} attempts). ${reason}`
      : `Attempt ${shown} of ${rows.length}${shown === chosen ? ' (chosen)' : ''}. ${reason}`,
    ...rows.map((r) => `  attempt ${r.attempt}${r.chosen ? ' (chosen)' : ''}: ${r.result}`),
    'Print another with --attempt N.',
  ];
  return lines.join('\n');
}
