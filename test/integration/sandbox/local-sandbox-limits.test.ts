import { chmod, copyFile, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import {
  createLocalSandboxFactory,
  describeUnenforced,
  type LocalSandbox,
  type LocalSandboxFactoryOptions,
} from '../../../src/sandbox/local/local-sandbox.js';

const MiB = 1024 * 1024;
const HOW =
  'run the tests as root on a host with the cgroup v1 memory and pids hierarchies (or delegated cgroup v2 controllers), loop devices and mke2fs';

/**
 * Whole-sandbox limits of the local driver (issue 9, item 3), against real bubblewrap, real cgroups
 * and a real loop-mounted file system. The host must enforce them: a host that cannot is reported
 * with what it lacks, not skipped.
 */
describe('local sandbox: whole-sandbox limits', () => {
  let workRoot: string;
  const sandboxes: LocalSandbox[] = [];
  const create = async (
    limits: Parameters<ReturnType<typeof createLocalSandboxFactory>['create']>[0]['limits'],
    factoryOptions: LocalSandboxFactoryOptions = {},
  ): Promise<LocalSandbox> => {
    const sb = await createLocalSandboxFactory({ workRoot, ...factoryOptions }).create({
      jobId: 'limits',
      limits,
    });
    sandboxes.push(sb);
    const missing = describeUnenforced(sb.enforced);
    expect(missing, `${HOW}; missing here:\n${missing.join('\n')}`).toEqual([]);
    return sb;
  };

  beforeAll(async () => {
    workRoot = await mkdtemp(path.join(os.tmpdir(), 'frognano-limits-test-'));
    await chmod(workRoot, 0o711);
  });

  afterAll(async () => {
    for (const sb of sandboxes) await sb.destroy();
    await rm(workRoot, { recursive: true, force: true });
  });

  it('holds three 700 MB processes to 1 GiB for the whole sandbox (OOM kill, host memory untouched)', async () => {
    const sb = await create({ memoryMiB: 1024, cpuSeconds: 60 });
    // Each process fills 700 MB (bytes written, so resident) and holds it; RLIMIT_AS (1 GiB per
    // process) lets each one through, so only the whole-sandbox limit can stop the three together.
    const fill =
      'import sys, time; b = bytearray(b"\\x01") * (700 * 1024 * 1024); print("ok", flush=True); time.sleep(4)';
    const r = await sb.exec(
      `for i in 1 2 3; do python3 -c '${fill}' & done; for i in 1 2 3; do wait -n; echo "status $?"; done`,
      { timeoutMs: 60_000 },
    );
    const out = r.stdout.toString();
    const statuses = [...out.matchAll(/^status (\d+)$/gm)].map((m) => Number(m[1]));
    expect(statuses, out + r.stderr.toString()).toHaveLength(3);
    // At most one 700 MB process fits in 1 GiB: at least two were killed (SIGKILL: 128 + 9).
    expect(statuses.filter((s) => s === 137).length).toBeGreaterThanOrEqual(2);
    const peak = await sb.peakMemoryBytes();
    expect(peak).toBeDefined();
    expect(peak).toBeLessThanOrEqual(1024 * MiB);
    expect(peak).toBeGreaterThan(700 * MiB);
    // The OOM killer took the bomb, not the sandbox's agent.
    expect((await sb.exec('echo alive')).stdout.toString()).toBe('alive\n');
  });

  it('counts /tmp (tmpfs) against the memory limit', async () => {
    const sb = await create({ memoryMiB: 1024, cpuSeconds: 60 });
    const alloc = 'b = bytearray(b"\\x01") * (800 * 1024 * 1024)';
    expect((await sb.exec(['python3', '-c', alloc], { timeoutMs: 60_000 })).exitCode).toBe(0);
    // /tmp is a quarter of the memory limit: 250 MB of it plus 800 MB of heap is over 1 GiB.
    const fill = await sb.exec('head -c 250M /dev/zero > /tmp/fill && echo filled', { timeoutMs: 30_000 });
    expect(fill.stdout.toString()).toBe('filled\n');
    const r = await sb.exec(['python3', '-c', alloc], { timeoutMs: 60_000 });
    expect(r.signal).toBe('SIGKILL');
    expect(await sb.peakMemoryBytes()).toBeLessThanOrEqual(1024 * MiB);
    // /tmp and /dev/shm have sizes of their own besides.
    const big = await sb.exec('head -c 300M /dev/zero > /tmp/more; echo "exit $?"; df -m /tmp /dev/shm', {
      timeoutMs: 30_000,
    });
    expect(big.stderr.toString()).toContain('No space left on device');
    expect(big.stdout.toString()).toMatch(/tmpfs\s+256\s/);
    expect(big.stdout.toString()).toMatch(/tmpfs\s+64\s/);
  });

  it('fails a write beyond the workspace size inside the sandbox, leaving the host disk alone', async () => {
    const sb = await create({ diskMiB: 64 });
    const r = await sb.exec('head -c 200M /dev/zero > big.bin; echo "exit $?"; stat -c %s big.bin', {
      timeoutMs: 30_000,
    });
    expect(r.stderr.toString()).toContain('No space left on device');
    expect(r.stdout.toString()).toMatch(/^exit 1\n/);
    const size = Number(r.stdout.toString().split('\n')[1]);
    expect(size).toBeLessThan(64 * MiB);
    // The file tools hit the same wall.
    const err = await sb.writeFile('big2.bin', Buffer.alloc(100 * MiB)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeDefined();
    expect((await sb.exec('echo alive')).stdout.toString()).toBe('alive\n');
  });

  it('runs as an unprivileged host uid: what the sandbox makes is not root-owned, not setuid-able', async () => {
    const sb = await create({});
    expect(sb.hostUid).not.toBe(0);
    await sb.exec('cp /bin/true tool && chmod 4755 tool; mkdir -p d && touch d/f');
    for (const name of ['tool', 'd', 'd/f']) {
      const st = await stat(path.join(sb.workdir, name));
      expect(st.uid, name).toBe(sb.hostUid);
    }
    // The workspace file system is mounted nosuid and nodev.
    const mounts = (await sb.exec(['cat', '/proc/self/mountinfo'])).stdout.toString();
    const line = mounts.split('\n').find((l) => l.split(' ')[4] === sb.workdir);
    expect(line).toMatch(/nosuid/);
    expect(line).toMatch(/nodev/);
    // Workspaces live in 0700 folders.
    for (let dir = path.dirname(sb.workdir); dir !== workRoot; dir = path.dirname(dir)) {
      expect(((await stat(dir)).mode & 0o777).toString(8), dir).toBe('700');
    }
  });

  it('starts when the package lies below a folder the sandbox uid cannot traverse (a 0700 checkout)', async () => {
    // The launcher (like the agent script) is copied into the sandbox's private folder, so bwrap,
    // running as the unprivileged uid, never has to reach the package's own folder.
    const closed = await mkdtemp(path.join(os.tmpdir(), 'frognano-closed-checkout-'));
    try {
      await chmod(closed, 0o700);
      const launcher = path.join(closed, 'sandbox-exec');
      await copyFile(fileURLToPath(new URL('../../../native/build/sandbox-exec', import.meta.url)), launcher);
      const sb = await create(undefined, { launcherPath: launcher });
      expect(sb.hostUid).not.toBe(0);
      const r = await sb.exec('echo ok');
      expect([r.exitCode, r.stdout.toString()]).toEqual([0, 'ok\n']);
    } finally {
      await rm(closed, { recursive: true, force: true });
    }
  });

  it('does not show /usr/local, yet has node, bash, python3 with pytest and git', async () => {
    const sb = await create({});
    const r = await sb.exec(
      'ls -A /usr/local | wc -l; touch /usr/local/x 2>&1; for t in node bash python3 git; do command -v $t; done; python3 -m pytest --version 2>&1 | head -1',
    );
    const lines = r.stdout.toString().split('\n');
    expect(lines[0]).toBe('0');
    expect(r.stdout.toString()).toContain('Read-only file system');
    for (const tool of ['node', 'bash', 'python3', 'git'])
      expect(r.stdout.toString()).toContain(`/${tool}\n`);
    expect(lines.filter((l) => l.startsWith('/usr/local/'))).toEqual([]);
    expect(r.stdout.toString()).toMatch(/pytest \d/);
  });

  it('refuses (in refuse mode) a sandbox whose limits do not all hold, naming the fix', async () => {
    // A caller's own directory as the workspace has no size limit: the worker's mode refuses it.
    const host = await mkdtemp(path.join(workRoot, 'host-'));
    const err = await createLocalSandboxFactory({ workRoot, unenforcedLimits: 'refuse' })
      .create({ jobId: 'refused', hostWorkdir: host })
      .then(
        (sb) => sb.destroy(),
        (e: unknown) => e,
      );
    expect(isAppError(err, 'SANDBOX_UNAVAILABLE')).toBe(true);
    expect((err as Error).message).toContain('size of the workspace');
    expect((err as Error).message).toContain('SANDBOX_ALLOW_UNLIMITED=true');
    const warnings: string[] = [];
    const sb = await createLocalSandboxFactory({ workRoot, onUnenforced: (m) => warnings.push(m) }).create({
      jobId: 'warned',
      hostWorkdir: host,
    });
    await sb.destroy();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('NOT enforced');
  });
});
