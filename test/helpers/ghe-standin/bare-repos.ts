import { spawn } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The fixed identity of commits the stand-in makes itself (initial commits, `commitFiles`). */
export const STANDIN_GIT_IDENTITY = { name: 'GHE Stand-in', email: 'standin@ghe-standin.test' } as const;

/** Seconds since the epoch of the initial commit, fixed so that initial commit SHAs are stable. */
const INITIAL_COMMIT_TIME_S = 1_700_000_000;
/** Bound on any one git command the stand-in runs itself (ms). */
const GIT_TIMEOUT_MS = 30_000;

export const ZERO_SHA = '0'.repeat(40);

/** Environment for every git process: no system/global config of the machine leaks in. */
export function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    ...extra,
  };
}

export interface GitResult {
  stdout: string;
  /** stdout as bytes (file contents may be binary). */
  stdoutBuffer: Buffer;
  stderr: string;
  code: number | null;
}

/**
 * Run `git args…` (no shell), feeding `input` on stdin; resolves with exit code and output.
 * Killed after {@link GIT_TIMEOUT_MS}.
 */
export function runGit(
  args: string[],
  options: { cwd?: string; input?: string | Buffer; env?: Record<string, string> } = {},
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, {
      cwd: options.cwd,
      env: gitEnv(options.env),
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: GIT_TIMEOUT_MS,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        stdout: Buffer.concat(out).toString('utf8'),
        stdoutBuffer: Buffer.concat(out),
        stderr: Buffer.concat(err).toString('utf8'),
        code,
      }),
    );
    child.stdin.on('error', () => undefined); // git may exit before reading all input
    child.stdin.end(options.input ?? '');
  });
}

/** Like {@link runGit} but resolves stdout only; throws Error with stderr on a non-zero exit. */
export async function gitOrThrow(
  args: string[],
  options: Parameters<typeof runGit>[1] = {},
): Promise<string> {
  const result = await runGit(args, options);
  if (result.code !== 0) {
    throw new Error(`git ${args.join(' ')} failed (exit ${String(result.code)}): ${result.stderr.trim()}`);
  }
  return result.stdout;
}

/** Quote a path for `git fast-import` (C-style, which JSON string escaping satisfies for text). */
function quotePath(p: string): string {
  return JSON.stringify(p);
}

function dataBlock(content: string): string {
  return `data ${Buffer.byteLength(content, 'utf8')}\n${content}\n`;
}

/**
 * Write one commit on `branch` with `git fast-import` (one process however many files), on top of
 * `parent` when given. Paths in `deletions` are removed. Returns the new commit SHA.
 */
export async function fastImportCommit(
  dir: string,
  options: {
    branch: string;
    parent: string | null;
    files: Record<string, string>;
    deletions?: string[];
    message: string;
    author?: { name: string; email: string };
    timeS: number;
  },
): Promise<string> {
  const who = options.author ?? STANDIN_GIT_IDENTITY;
  const stamp = `${who.name} <${who.email}> ${options.timeS} +0000`;
  let stream = `commit refs/heads/${options.branch}\nmark :1\nauthor ${stamp}\ncommitter ${stamp}\n`;
  stream += dataBlock(options.message);
  if (options.parent) stream += `from ${options.parent}\n`;
  for (const p of options.deletions ?? []) stream += `D ${quotePath(p)}\n`;
  for (const [p, content] of Object.entries(options.files)) {
    stream += `M 100644 inline ${quotePath(p)}\n${dataBlock(content)}`;
  }
  stream += '\n';
  // --force: the caller decides the parent; fast-import must not refuse a rewritten branch.
  await gitOrThrow(['--git-dir', dir, 'fast-import', '--quiet', '--force'], { input: stream });
  return (await gitOrThrow(['--git-dir', dir, 'rev-parse', `refs/heads/${options.branch}`])).trim();
}

// The hooks run inside receive-pack, started by `git http-backend` with the environment the
// stand-in gave it. post-receive appends `old new ref` lines to the per-request log file; the
// stand-in reads it when the CGI exits, so a push is recorded before the client sees it finish.
const POST_RECEIVE_HOOK = `#!/bin/sh
if [ -n "$GHE_STANDIN_PUSH_LOG" ]; then cat >> "$GHE_STANDIN_PUSH_LOG"; else cat > /dev/null; fi
`;
// Protected branches: refuse like GitHub's GH006 when the ref is listed in the repo's file.
const PRE_RECEIVE_HOOK = `#!/bin/sh
list="\${GIT_DIR:-.}/ghe-standin-protected-refs"
status=0
while read old new ref; do
  if [ -f "$list" ] && grep -qxF "$ref" "$list"; then
    echo "error: GH006: Protected branch update failed for $ref." >&2
    status=1
  fi
done
exit $status
`;

/**
 * Create a bare repository at `dir` with `files` committed on `defaultBranch` by the fixed test
 * identity. Enables `http.receivepack` and installs the stand-in's hooks. Returns the commit SHA.
 */
export async function initBareRepo(
  dir: string,
  options: { files: Record<string, string>; defaultBranch: string; message?: string },
): Promise<string> {
  await mkdir(dir, { recursive: true });
  // --template= : no sample hooks; ours are the only ones.
  await gitOrThrow([
    'init',
    '--quiet',
    '--bare',
    '--template=',
    `--initial-branch=${options.defaultBranch}`,
    dir,
  ]);
  await gitOrThrow(['--git-dir', dir, 'config', 'http.receivepack', 'true']);
  await mkdir(path.join(dir, 'hooks'), { recursive: true });
  for (const [name, text] of [
    ['post-receive', POST_RECEIVE_HOOK],
    ['pre-receive', PRE_RECEIVE_HOOK],
  ] as const) {
    const file = path.join(dir, 'hooks', name);
    await writeFile(file, text);
    await chmod(file, 0o755);
  }
  return fastImportCommit(dir, {
    branch: options.defaultBranch,
    parent: null,
    files: options.files,
    message: options.message ?? 'Initial commit\n',
    timeS: INITIAL_COMMIT_TIME_S,
  });
}

/** Resolve `rev` to a commit SHA in the bare repo, or `null` when it does not name a commit. */
export async function resolveCommit(dir: string, rev: string): Promise<string | null> {
  if (rev.startsWith('-')) return null;
  const r = await runGit(['--git-dir', dir, 'rev-parse', '--verify', '--quiet', `${rev}^{commit}`]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/** The commit SHA of `refs/heads/{branch}` exactly, or `null` when there is no such branch. */
export async function branchSha(dir: string, branch: string): Promise<string | null> {
  const r = await runGit(['--git-dir', dir, 'show-ref', '--verify', '--hash', `refs/heads/${branch}`]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/** Branch names (without `refs/heads/`), sorted. */
export async function listBranchNames(dir: string): Promise<string[]> {
  const out = await gitOrThrow([
    '--git-dir',
    dir,
    'for-each-ref',
    '--format=%(refname:lstrip=2)',
    'refs/heads/',
  ]);
  return out
    .split('\n')
    .filter((l) => l !== '')
    .sort();
}

/** Write the protected-refs list the pre-receive hook reads. */
export async function writeProtectedRefs(dir: string, branches: Iterable<string>): Promise<void> {
  const lines = [...branches].map((b) => `refs/heads/${b}\n`).join('');
  await writeFile(path.join(dir, 'ghe-standin-protected-refs'), lines);
}

/** `{commits, additions, deletions, changedFiles}` of `base...head` (merge-base diff, like a PR). */
export async function diffStats(
  dir: string,
  base: string,
  head: string,
): Promise<{ commits: number; additions: number; deletions: number; changedFiles: number }> {
  const count = await gitOrThrow(['--git-dir', dir, 'rev-list', '--count', `${base}..${head}`]);
  const numstat = await gitOrThrow(['--git-dir', dir, 'diff', '--numstat', `${base}...${head}`]);
  let additions = 0;
  let deletions = 0;
  let changedFiles = 0;
  for (const line of numstat.split('\n')) {
    const [a, d] = line.split('\t');
    if (a === undefined || d === undefined) continue;
    changedFiles += 1;
    additions += Number.parseInt(a, 10) || 0; // `-` for binary files
    deletions += Number.parseInt(d, 10) || 0;
  }
  return { commits: Number.parseInt(count.trim(), 10), additions, deletions, changedFiles };
}
