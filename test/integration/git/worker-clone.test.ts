import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract } from 'tar-stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { applyPatch, stagedDiffStat } from '../../../src/git/apply-patch.js';
import { archiveTrackedFiles } from '../../../src/git/archive-tracked-files.js';
import { cloneRepository } from '../../../src/git/clone-repository.js';
import { commitChanges } from '../../../src/git/commit-changes.js';
import { pushBranch } from '../../../src/git/push-branch.js';
import { createFixtureGit } from '../../helpers/fixture-git.js';

const HUMAN = { name: 'Ada Human', email: 'ada@example.test' };
const APP = { name: 'frognano[bot]', email: '7+frognano[bot]@users.noreply.ghe.test' };

/** Plain git for arranging fixtures (not the code under test). */
const git = createFixtureGit({ identity: HUMAN });

let root: string;
let bare: string;
let url: string;
let baseSha: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'frognano-git-'));
  bare = join(root, 'remote.git');
  const seed = join(root, 'seed');
  await mkdir(seed);
  await git(seed, 'init', '-q', '-b', 'main');
  await writeFile(join(seed, 'calc.py'), 'def add(a, b):\n    return a - b\n');
  await writeFile(join(seed, 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
  await mkdir(join(seed, 'tests', 'deep'), { recursive: true });
  await writeFile(join(seed, 'tests', 'deep', 'test_calc.py'), 'from calc import add\n');
  await writeFile(join(seed, '.gitattributes'), 'tests/** export-ignore\n');
  await writeFile(join(seed, '.gitignore'), 'ignored.txt\n');
  await symlink('calc.py', join(seed, 'link.py'));
  await git(seed, 'add', '-A');
  await git(seed, 'commit', '-q', '-m', 'initial');
  await git(root, 'clone', '-q', '--bare', seed, bare);
  url = `file://${bare}`;
  baseSha = (await git(bare, 'rev-parse', 'refs/heads/main')).trim();
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

let work: string;
beforeEach(async () => {
  work = join(await mkdtemp(join(root, 'w-')), 'clone');
});

const FIX = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
`;

describe('cloneRepository', () => {
  it('clones the branch shallowly and records a remote URL without credentials', async () => {
    const { headSha } = await cloneRepository({ url, dir: work, branch: 'main' });
    expect(headSha).toBe(baseSha);
    expect(await readFile(join(work, 'calc.py'), 'utf8')).toContain('a - b');
    expect((await git(work, 'rev-parse', '--is-shallow-repository')).trim()).toBe('true');
    expect((await git(work, 'remote', 'get-url', 'origin')).trim()).toBe(url);
  });

  it('fails with GITHUB_API_ERROR, not retryable, when the branch does not exist', async () => {
    const err = await cloneRepository({ url, dir: work, branch: 'nope' }).catch((e: unknown) => e);
    expect(isAppError(err, 'GITHUB_API_ERROR')).toBe(true);
    expect((err as { retryable: boolean }).retryable).toBe(false);
  });

  it('stops with CANCELLED when the signal is already aborted', async () => {
    const err = await cloneRepository({ url, dir: work, branch: 'main', signal: AbortSignal.abort() }).catch(
      (e: unknown) => e,
    );
    expect(isAppError(err, 'CANCELLED')).toBe(true);
  });
});

describe('applyPatch and stagedDiffStat', () => {
  it('applies a patch to the tree and the index', async () => {
    await cloneRepository({ url, dir: work, branch: 'main' });
    await applyPatch(work, FIX);
    expect(await readFile(join(work, 'calc.py'), 'utf8')).toContain('a + b');
    expect(await git(work, 'diff', '--cached', '--name-only')).toBe('calc.py\n');
    const stat = await stagedDiffStat(work);
    expect(stat.files).toEqual([{ path: 'calc.py', added: 1, removed: 1 }]);
    expect(stat.stat).toMatch(/calc\.py \| 2 \+-\n 1 file changed, 1 insertion\(\+\), 1 deletion\(-\)/);
  });

  it('applies a binary patch (new file) as produced with --binary', async () => {
    const src = join(root, `bin-${Date.now()}`);
    await git(root, 'clone', '-q', bare, src);
    await writeFile(join(src, 'logo.bin'), Buffer.from([0, 1, 2, 255, 0, 7]));
    await git(src, 'add', 'logo.bin');
    const patch = await git(src, 'diff', '--cached', '--binary');
    await cloneRepository({ url, dir: work, branch: 'main' });
    await applyPatch(work, patch);
    expect([...(await readFile(join(work, 'logo.bin')))]).toEqual([0, 1, 2, 255, 0, 7]);
    expect((await stagedDiffStat(work)).files).toEqual([{ path: 'logo.bin', added: null, removed: null }]);
  });

  it('refuses a patch that does not apply and leaves the clone unchanged', async () => {
    await cloneRepository({ url, dir: work, branch: 'main' });
    const stale = FIX.replace('-    return a - b', '-    return a * b').replace(
      'diff --git a/calc.py b/calc.py',
      'diff --git a/calc.py b/calc.py',
    );
    const twoFiles = `${stale}diff --git a/run.sh b/run.sh\n--- a/run.sh\n+++ b/run.sh\n@@ -2 +2 @@\n-echo hi\n+echo bye\n`;
    const err = await applyPatch(work, twoFiles).catch((e: unknown) => e);
    expect(isAppError(err, 'PATCH_DOES_NOT_APPLY')).toBe(true);
    expect(await readFile(join(work, 'run.sh'), 'utf8')).toContain('echo hi');
    expect(await git(work, 'status', '--porcelain')).toBe('');
  });

  it('refuses a patch whose paths leave the repository', async () => {
    await cloneRepository({ url, dir: work, branch: 'main' });
    const escape = `diff --git a/../evil.txt b/../evil.txt\nnew file mode 100644\n--- /dev/null\n+++ b/../evil.txt\n@@ -0,0 +1 @@\n+pwned\n`;
    const err = await applyPatch(work, escape).catch((e: unknown) => e);
    expect(isAppError(err, 'PATCH_DOES_NOT_APPLY')).toBe(true);
    await expect(lstat(join(work, '..', 'evil.txt'))).rejects.toThrow();
  });

  it('refuses a patch that writes through a symbolic link', async () => {
    await cloneRepository({ url, dir: work, branch: 'main' });
    const through = `diff --git a/link.py b/link.py\n--- a/link.py\n+++ b/link.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return 0\n`;
    const err = await applyPatch(work, through).catch((e: unknown) => e);
    expect(isAppError(err, 'PATCH_DOES_NOT_APPLY')).toBe(true);
    expect(await readFile(join(work, 'calc.py'), 'utf8')).toContain('a - b');
  });
});

describe('commitChanges and pushBranch', () => {
  async function fixedClone(date = new Date('2024-05-01T12:00:00Z')): Promise<string> {
    await cloneRepository({ url, dir: work, branch: 'main' });
    await applyPatch(work, FIX);
    return commitChanges(work, {
      author: APP,
      message: 'Fix add\n\nCo-authored-by: ada <1+ada@users.noreply.ghe.test>',
      date,
    });
  }

  it('commits as the app with the message verbatim, then pushes a new branch', async () => {
    const sha = await fixedClone();
    const info = await git(work, 'log', '-1', '--format=%an|%ae|%cn|%ce|%aI|%B', sha);
    expect(info).toBe(
      `${APP.name}|${APP.email}|${APP.name}|${APP.email}|2024-05-01T12:00:00+00:00|Fix add\n\nCo-authored-by: ada <1+ada@users.noreply.ghe.test>\n\n`,
    );
    const pushed = await pushBranch({
      dir: work,
      branch: 'frognano/issue-1',
      defaultBranch: 'main',
      owner: APP,
    });
    expect(pushed).toEqual({ sha, previousSha: null });
    expect((await git(bare, 'rev-parse', 'refs/heads/frognano/issue-1')).trim()).toBe(sha);
    expect((await git(bare, 'rev-parse', 'refs/heads/main')).trim()).toBe(baseSha);
  });

  it("replaces the app's own earlier commit on a second run", async () => {
    const first = await fixedClone();
    await pushBranch({ dir: work, branch: 'frognano/issue-2', defaultBranch: 'main', owner: APP });
    work = join(await mkdtemp(join(root, 'w-')), 'clone');
    const second = await fixedClone(new Date('2024-05-02T12:00:00Z'));
    expect(second).not.toBe(first);
    const pushed = await pushBranch({
      dir: work,
      branch: 'frognano/issue-2',
      defaultBranch: 'main',
      owner: APP,
    });
    expect(pushed.previousSha).toBe(first);
    expect((await git(bare, 'rev-parse', 'refs/heads/frognano/issue-2')).trim()).toBe(second);
  });

  it('refuses to overwrite a branch whose tip was made by someone else', async () => {
    // A person pushed their own commit to the branch the bot would use.
    const human = join(root, `human-${Date.now()}`);
    await git(root, 'clone', '-q', bare, human);
    await writeFile(join(human, 'notes.txt'), 'mine\n');
    await git(human, 'add', 'notes.txt');
    await git(human, 'commit', '-q', '-m', 'human work');
    await git(human, 'push', '-q', 'origin', 'HEAD:refs/heads/frognano/issue-3');
    const humanSha = (await git(human, 'rev-parse', 'HEAD')).trim();

    await fixedClone();
    const err = await pushBranch({
      dir: work,
      branch: 'frognano/issue-3',
      defaultBranch: 'main',
      owner: APP,
    }).catch((e: unknown) => e);
    expect(isAppError(err, 'POLICY_REFUSED')).toBe(true);
    expect((err as Error).message).toContain('Ada Human <ada@example.test>');
    expect((await git(bare, 'rev-parse', 'refs/heads/frognano/issue-3')).trim()).toBe(humanSha);
  });

  it('never pushes to the default branch or to a name that is not a branch', async () => {
    await fixedClone();
    for (const branch of ['main', 'refs/heads/main', 'bad..name', 'frognano/@{-1}', '']) {
      const err = await pushBranch({ dir: work, branch, defaultBranch: 'main', owner: APP }).catch(
        (e: unknown) => e,
      );
      expect(isAppError(err, 'POLICY_REFUSED'), branch).toBe(true);
    }
    expect((await git(bare, 'rev-parse', 'refs/heads/main')).trim()).toBe(baseSha);
  });
});

describe('archiveTrackedFiles', () => {
  it('packs exactly the tracked files, with modes and symlinks, without .git', async () => {
    await cloneRepository({ url, dir: work, branch: 'main' });
    await writeFile(join(work, 'untracked.txt'), 'not in git\n');
    await writeFile(join(work, 'ignored.txt'), 'ignored\n');
    await applyPatch(work, FIX);

    const entries = new Map<string, { type: string; mode: number; body: string; linkname?: string }>();
    const ex = extract();
    ex.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c) => chunks.push(c as Buffer));
      stream.on('end', () => {
        entries.set(header.name, {
          type: header.type,
          mode: header.mode,
          body: Buffer.concat(chunks).toString('utf8'),
          linkname: header.linkname ?? undefined,
        });
        next();
      });
    });
    const finished = new Promise<void>((resolve, reject) => {
      ex.on('finish', () => resolve());
      ex.on('error', reject);
    });
    archiveTrackedFiles(work).pipe(ex as unknown as NodeJS.WritableStream);
    await finished;

    expect([...entries.keys()].sort()).toEqual(
      [
        '.gitattributes',
        '.gitignore',
        'calc.py',
        'link.py',
        'run.sh',
        'tests',
        'tests/deep',
        'tests/deep/test_calc.py',
      ].sort(),
    );
    expect(entries.get('calc.py')?.body).toContain('a + b'); // the patched tree
    expect(entries.get('run.sh')?.mode).toBe(0o755);
    expect(entries.get('calc.py')?.mode).toBe(0o644);
    expect(entries.get('tests')?.type).toBe('directory');
    expect(entries.get('link.py')).toMatchObject({ type: 'symlink', linkname: 'calc.py' });
    // The working tree's symlink is still what git checked out.
    expect(await readlink(join(work, 'link.py'))).toBe('calc.py');
  });

  it('reports a failure through the stream', async () => {
    const notRepo = await mkdtemp(join(root, 'plain-'));
    const stream = archiveTrackedFiles(notRepo);
    await expect(
      new Promise((resolve, reject) => {
        stream.on('error', reject);
        stream.on('end', resolve);
        stream.resume();
      }),
    ).rejects.toThrow(/git ls-files failed/);
  });
});
