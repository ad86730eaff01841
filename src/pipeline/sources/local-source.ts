import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { AppError } from '../../app-error.js';
import type { JobContext, JobPolicy } from '../job-context.js';
import type { JobSource, PreparedJob } from './job-source.js';

const run = promisify(execFile);

/** What {@link createLocalSource} works on. */
export interface LocalSourceOptions {
  /** A local folder, a local git repository (its HEAD), or a git URL (its default branch). */
  repo: string;
  /** The task, as the user wrote it (untrusted: quoted as data in the instruction). */
  issueText: string;
  /** The policy of the run (built-in defaults plus the command's flags). */
  policy: JobPolicy;
}

/**
 * The source of `frognano-bot run`: a FRESH repository made in the job's workspace from `repo`
 * (see {@link prepareLocalCheckout}) and the issue text. The publisher needs nothing from it.
 *
 * @throws (from `prepare`) AppError `CLONE_FAILED` when `repo` cannot be cloned.
 */
export function createLocalSource(options: LocalSourceOptions): JobSource<null> {
  return {
    async prepare(ctx: JobContext, workspace: string): Promise<PreparedJob<null>> {
      const dir = join(workspace, 'repo');
      const baseSha = await prepareLocalCheckout(options.repo, dir);
      ctx.logger.info({ baseSha }, 'checkout prepared');
      return {
        policy: options.policy,
        dir,
        baseSha,
        instruction: () => buildLocalInstruction(options.issueText),
        target: null,
      };
    },
  };
}

/** The user message for a local run: the issue text, quoted as data. */
export function buildLocalInstruction(issueText: string): string {
  return `Resolve the following issue in this repository.\n\n<issue>\n${issueText.trim()}\n</issue>`;
}

const GIT_ENV = {
  ...process.env,
  GIT_TERMINAL_PROMPT: '0',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'frognano-bot',
  GIT_AUTHOR_EMAIL: 'frognano-bot@localhost',
  GIT_COMMITTER_NAME: 'frognano-bot',
  GIT_COMMITTER_EMAIL: 'frognano-bot@localhost',
};

/**
 * Make `workdir` a FRESH repository holding `source`'s files at a base commit, with no remote:
 * a clone (of a local git repository's HEAD, or a git URL's default branch) or a copy (a plain
 * folder, without any `.git` in it). Fresh means a `.git` made here, with no hooks (`--template=`,
 * not even git's samples) and no config from the source, so nothing of the user's repository
 * (hooks, `core.fsmonitor`, aliases) ever runs: the sandbox gets only the tracked files of it
 * (through `archiveTrackedFiles`), and the patch is applied here afterwards.
 *
 * @returns the base commit (empty when the source has no files to commit).
 * @throws AppError `CLONE_FAILED` when `source` cannot be cloned.
 */
export async function prepareLocalCheckout(source: string, workdir: string): Promise<string> {
  const git = (args: string[], cwd?: string) => run('git', args, { cwd, env: GIT_ENV, maxBuffer: 64 << 20 });
  const isDir = existsSync(source) && statSync(source).isDirectory();
  const isRepo =
    isDir &&
    (await git(['rev-parse', '--show-toplevel'], source).then(
      (r) => resolve(r.stdout.trim()) === resolve(source),
      () => false,
    ));
  if (isDir && !isRepo) {
    await cp(source, workdir, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (p) => !p.split(/[\\/]/).includes('.git'),
    });
    await git(['init', '--quiet', '--template=', workdir]);
  } else {
    const depth = isDir ? [] : ['--depth', '1'];
    await git(['clone', '--quiet', '--template=', '--no-hardlinks', ...depth, source, workdir]).catch(
      (err: unknown) => {
        throw new AppError(
          'CLONE_FAILED',
          `could not clone ${source}: ${(err as { stderr?: string }).stderr ?? err}`,
        );
      },
    );
    await git(['remote', 'remove', 'origin'], workdir).catch(() => undefined);
  }
  await git(['add', '-A', '-f'], workdir);
  await git(['commit', '--quiet', '--no-verify', '--allow-empty', '-m', 'frognano: base'], workdir).catch(
    () => undefined,
  );
  return (await git(['rev-parse', 'HEAD'], workdir).catch(() => ({ stdout: '' }))).stdout.trim();
}
