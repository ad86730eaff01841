import { mkdir, readdir, readFile, rm, stat, writeFile, rename } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { AppError } from '../app-error.js';
import type { Logger } from './logger.js';
import { parseTrajectoryText, trajectoryFileCandidates } from './trajectory-journal.js';

/**
 * Where trajectories and test logs of jobs are kept: one folder per job under `dir`
 * (`<dir>/<jobId>/trajectory.json`, `<dir>/<jobId>/<name>.log`; with best-of-N candidates also
 * `<dir>/<jobId>/candidate-<n>.json` per candidate (`attempt-<n>.json` in jobs stored before the rename), `trajectory.json` then being a copy of the chosen one,
 * and `candidates.json` (`attempts.json` before), the summary of the choice);
 * in Kubernetes `dir` is a volume. Folders older than `retentionDays` are removed by {@link
 * TrajectoryStore.sweep}.
 */
export interface TrajectoryStore {
  readonly dir: string;
  /** Folder of one job (created on first write). */
  jobDir(jobId: string): string;
  /** Path of a job's trajectory file (`name` default `trajectory`). */
  trajectoryPath(jobId: string, name?: string): string;
  /** Store a text log (test output…) of a job; returns its path. */
  saveLog(jobId: string, name: string, text: string): Promise<string>;
  /**
   * Store a JSON document of a job as `<name>.json` (written to a temporary file, then renamed, so a
   * reader never sees half a file); returns its path. `name` is made safe like {@link saveLog}'s.
   */
  saveJson(jobId: string, name: string, data: unknown): Promise<string>;
  /**
   * Load a trajectory by job id (or a path to a `.json` trajectory file or `.jsonl` journal). A
   * missing `.json` file falls back to its journal (the job is running, or crashed). Throws
   * `TRAJECTORY_NOT_FOUND`.
   */
  load(jobIdOrPath: string): Promise<unknown>;
  /** Remove job folders whose newest file is older than the retention; returns how many. */
  sweep(now?: number): Promise<number>;
}

const SAFE_ID = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * Create a {@link TrajectoryStore}.
 *
 * @param options.dir the folder (created when missing).
 * @param options.retentionDays days a job's folder is kept (default 30).
 */
export function createTrajectoryStore(options: {
  dir: string;
  retentionDays?: number;
  logger?: Logger;
}): TrajectoryStore {
  const dir = resolve(options.dir);
  const retentionMs = (options.retentionDays ?? 30) * 24 * 3600 * 1000;
  const jobDir = (jobId: string): string => {
    // Job ids become folder names: refuse anything that could climb out of the store.
    if (!SAFE_ID.test(jobId) || jobId === '.' || jobId === '..') {
      throw new AppError('TRAJECTORY_NOT_FOUND', `not a job id: ${JSON.stringify(jobId)}`);
    }
    return join(dir, jobId);
  };
  return {
    dir,
    jobDir,
    trajectoryPath: (jobId, name = 'trajectory') => join(jobDir(jobId), `${name}.json`),
    async saveLog(jobId, name, text) {
      const d = jobDir(jobId);
      await mkdir(d, { recursive: true });
      const path = join(d, `${name.replace(/[^A-Za-z0-9._-]/g, '_')}.log`);
      await writeFile(`${path}.tmp`, text);
      await rename(`${path}.tmp`, path);
      return path;
    },
    async saveJson(jobId, name, data) {
      const d = jobDir(jobId);
      await mkdir(d, { recursive: true });
      const path = join(d, `${name.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
      await writeFile(`${path}.tmp`, `${JSON.stringify(data, null, 2)}\n`);
      await rename(`${path}.tmp`, path);
      return path;
    },
    async load(jobIdOrPath) {
      const candidates = trajectoryFileCandidates(
        /\.jsonl?$/.test(jobIdOrPath) ? resolve(jobIdOrPath) : join(jobDir(jobIdOrPath), 'trajectory.json'),
      );
      for (const path of candidates) {
        try {
          return parseTrajectoryText(path, await readFile(path, 'utf8'));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw new AppError('TRAJECTORY_NOT_FOUND', `cannot read ${path}: ${(err as Error).message}`);
        }
      }
      throw new AppError(
        'TRAJECTORY_NOT_FOUND',
        /\.jsonl?$/.test(jobIdOrPath)
          ? `no trajectory file ${candidates.join(' or ')}`
          : `no trajectory for job "${jobIdOrPath}" in ${dir}`,
      );
    },
    async sweep(now = Date.now()) {
      let removed = 0;
      let entries: string[];
      try {
        entries = await readdir(dir);
      } catch {
        return 0;
      }
      for (const name of entries) {
        const d = join(dir, name);
        try {
          const files = await readdir(d);
          let newest = (await stat(d)).mtimeMs;
          for (const f of files) newest = Math.max(newest, (await stat(join(d, f))).mtimeMs);
          if (now - newest > retentionMs) {
            await rm(d, { recursive: true, force: true });
            removed++;
          }
        } catch (err) {
          options.logger?.warn({ err, path: d }, 'trajectory sweep skipped an entry');
        }
      }
      return removed;
    },
  };
}
