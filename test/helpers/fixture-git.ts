import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Options of {@link createFixtureGit}. */
export interface FixtureGitOptions {
  /** Author and committer of every commit made through it. */
  identity: { name: string; email: string };
  /** `-c key=value` settings put before every command, e.g. `core.quotepath=off`. */
  config?: string[];
}

/**
 * Plain git for arranging fixtures (not the code under test): `git(cwd, ...args)` resolves to
 * stdout; no system or global configuration of the machine leaks in (HOME is `cwd`).
 *
 * @throws the `execFile` error (with `stderr`) when git exits non-zero.
 */
export function createFixtureGit(
  options: FixtureGitOptions,
): (cwd: string, ...args: string[]) => Promise<string> {
  const { name, email } = options.identity;
  const config = (options.config ?? []).flatMap((setting) => ['-c', setting]);
  return async (cwd, ...args) => {
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: cwd,
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: name,
      GIT_AUTHOR_EMAIL: email,
      GIT_COMMITTER_NAME: name,
      GIT_COMMITTER_EMAIL: email,
    };
    // 64 MiB: some fixtures diff large files.
    return (await exec('git', [...config, ...args], { cwd, env, maxBuffer: 64 * 1024 * 1024 })).stdout;
  };
}
