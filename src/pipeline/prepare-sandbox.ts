import type { Readable } from 'node:stream';
import { AppError, throwIfAborted } from '../app-error.js';
import type { Logger } from '../observability/logger.js';
import type { Sandbox, SandboxFactory, SandboxSettings } from '../sandbox/sandbox.js';

/**
 * Identity and date of the "base" commit made inside the sandbox. Fixed, so that the same tree
 * always gives the same base commit id, and obviously not a person.
 */
export const BASE_COMMIT_IDENTITY = { name: 'FrogNano base', email: 'base@frognano.invalid' } as const;
const BASE_COMMIT_DATE = '2000-01-01T00:00:00Z';

/** Wall-clock limit of `git init` + `git add` + `git commit` in the sandbox, in milliseconds. */
const BASE_COMMIT_TIMEOUT_MS = 600_000;

/** Default wall-clock limit of the setup command, in milliseconds (10 min). */
export const DEFAULT_SETUP_TIMEOUT_MS = 600_000;

/** Options of {@link prepareSandbox}. */
export interface PrepareSandboxOptions {
  sandboxFactory: SandboxFactory;
  /** Id of the sandbox (the job id). */
  sandboxId: string;
  /** The policy's sandbox settings (image, resources, runtime class, the job's time limit). */
  sandboxSettings?: SandboxSettings;
  /** Makes the tar stream of the repository's tracked files (no `.git`); called once. */
  tree: () => Readable;
  /** Command run after the base commit (offline; e.g. a build from vendored dependencies); `null` = none. */
  setupCommand: string | null;
  /** Wall-clock limit of the setup command, in milliseconds (default 600 000). */
  setupTimeoutMs?: number;
  signal?: AbortSignal;
  logger: Logger;
}

/** A sandbox ready for the agent loop, and how its setup command went. */
export interface PreparedSandbox {
  sandbox: Sandbox;
  /** Result of the setup command, when one ran. A failure is reported, not fatal. */
  setup?: { command: string; exitCode: number | null; timedOut: boolean; outputTail: string };
}

/**
 * Copy a tree (a tar stream from `tree()`) into `sandbox`, checking `signal` before and after; the
 * stream is destroyed in any case, so a copy that failed half-way leaves no archive reading files
 * for nobody.
 *
 * @throws the signal's reason when it aborted; the driver's `SANDBOX_COPY_FAILED`…
 */
export async function copyTreeIn(
  sandbox: Sandbox,
  tree: () => Readable,
  signal?: AbortSignal,
): Promise<void> {
  throwIfAborted(signal);
  const stream = tree();
  try {
    await sandbox.copyIn(stream);
  } finally {
    stream.destroy();
  }
  throwIfAborted(signal);
}

/**
 * Make the agent's sandbox: create it, prove it is offline, copy the repository in, and commit that
 * tree as the "base" commit of a fresh repository inside the sandbox (no remote, no credentials, a
 * fixed identity), so that the agent loop's patch is `git diff --binary` against it. On any failure
 * the sandbox is destroyed before the error is thrown.
 *
 * @throws AppError from the driver (`SANDBOX_UNAVAILABLE`, `SANDBOX_COPY_FAILED`…), from
 *   a probed factory (`EGRESS_NOT_BLOCKED`), `SANDBOX_EXEC_FAILED` when the base commit cannot be
 *   made, the signal's reason (`abortReason`: `CANCELLED`…) when `signal` aborted.
 */
export async function prepareSandbox(options: PrepareSandboxOptions): Promise<PreparedSandbox> {
  const { signal, logger } = options;
  const sandbox = await options.sandboxFactory.create({
    jobId: options.sandboxId,
    settings: options.sandboxSettings,
  });
  try {
    await copyTreeIn(sandbox, options.tree, signal);
    await commitBase(sandbox, signal);
    throwIfAborted(signal);
    const prepared: PreparedSandbox = { sandbox };
    if (options.setupCommand) {
      const r = await sandbox.exec(`exec 2>&1\n${options.setupCommand}`, {
        timeoutMs: options.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS,
        signal,
        env: { CI: 'true' },
        maxOutputBytes: 1024 * 1024,
      });
      throwIfAborted(signal);
      const outputTail = r.stdout.toString('utf8').split('\n').slice(-20).join('\n');
      prepared.setup = {
        command: options.setupCommand,
        exitCode: r.exitCode,
        timedOut: r.timedOut,
        outputTail,
      };
      if (r.exitCode !== 0 || r.timedOut) {
        logger.warn(
          { exitCode: r.exitCode, timedOut: r.timedOut },
          'the setup command failed in the agent sandbox',
        );
      }
    }
    return prepared;
  } catch (err) {
    await sandbox.destroy();
    throw err;
  }
}

/**
 * `git init` + `git add -A -f` + `git commit` of the whole workspace inside the sandbox. `-f`
 * because every file copied in is tracked upstream, even one a `.gitignore` matches.
 */
async function commitBase(sandbox: Sandbox, signal: AbortSignal | undefined): Promise<void> {
  const git =
    'git -c safe.directory=* -c core.autocrlf=false -c commit.gpgsign=false -c init.defaultBranch=base';
  const r = await sandbox.exec(
    [
      'set -e',
      `${git} init -q`,
      `${git} add -A -f`,
      `${git} commit -q --no-verify --allow-empty -m base`,
    ].join('\n'),
    {
      timeoutMs: BASE_COMMIT_TIMEOUT_MS,
      signal,
      env: {
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_AUTHOR_NAME: BASE_COMMIT_IDENTITY.name,
        GIT_AUTHOR_EMAIL: BASE_COMMIT_IDENTITY.email,
        GIT_AUTHOR_DATE: BASE_COMMIT_DATE,
        GIT_COMMITTER_NAME: BASE_COMMIT_IDENTITY.name,
        GIT_COMMITTER_EMAIL: BASE_COMMIT_IDENTITY.email,
        GIT_COMMITTER_DATE: BASE_COMMIT_DATE,
      },
    },
  );
  throwIfAborted(signal);
  if (r.exitCode !== 0 || r.timedOut) {
    throw new AppError(
      'SANDBOX_EXEC_FAILED',
      `could not commit the base tree inside the sandbox (${r.timedOut ? 'timed out' : `exit ${r.exitCode}`}): ` +
        r.stderr.toString('utf8').trim().split('\n').slice(-5).join('\n'),
    );
  }
}
