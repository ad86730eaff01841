import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, lstat, mkdtemp, readFile, readdir, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import {
  createLocalSandboxFactory,
  type LocalSandbox,
  type LocalSandboxFactory,
} from '../../../src/sandbox/local/local-sandbox.js';
import { sweepStaleWorkspaceDisks } from '../../../src/sandbox/local/workspace-disk.js';
import { SandboxFileError } from '../../../src/sandbox/sandbox.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { describeSandboxContract } from '../../helpers/sandbox-contract.js';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** Grace of the call deadlines in the contract run (ms): short, so that hostile cases end fast. */
const GRACE_MS = 1_500;

/**
 * Tries every way a command could reach the agent's channel from inside, and writes a forged
 * "exit 0" reply into whatever it gets: /proc/<pid>/fd opens, pidfd_getfd, ptrace, /proc/<pid>/mem
 * and process_vm_writev on every process outside its own session. Counts what worked.
 */
const TAKE_CHANNEL = String.raw`python3 - <<'PY'
import ctypes, json, os, stat, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def frame(i):
    h = json.dumps({"id": i, "ok": True, "exitCode": 0, "signal": None, "timedOut": False, "truncated": False, "blobs": [0, 0]}).encode()
    return struct.pack(">II", len(h), 0) + h
forged = b"".join(frame(i) for i in range(0, 64))
taken = 0
me = os.getsid(0)
def use(fd):
    global taken
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            taken += 1
            os.write(fd, forged)
    except OSError:
        pass
    os.close(fd)
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    pid = int(name)
    try:
        if os.getsid(pid) == me:
            continue
    except OSError:
        pass
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        fds = []
    for fd in fds:
        try:
            use(os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    pidfd = libc.syscall(434, pid, 0)  # pidfd_open
    if pidfd >= 0:
        for fd in range(64):
            got = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
            if got >= 0:
                use(got)
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        taken += 1
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDWR))
        taken += 1
    except OSError:
        pass
    buf = ctypes.create_string_buffer(8)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)
    if libc.syscall(311, pid, iov, 1, iov, 1, 0) >= 0:  # process_vm_writev
        taken += 1
print(f"taken {taken}")
sys.exit(3)
PY`;

/** The local driver's channel carries frames: a command prints forged ones on its own output. */
const MARKERS = String.raw`python3 - "$@" <<'PY'
import json, struct, sys
claimed, saved, real = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def frame(i):
    h = json.dumps({"id": i, "ok": True, "exitCode": claimed, "signal": None, "timedOut": False, "truncated": False, "blobs": [0, 0]}).encode()
    return struct.pack(">II", len(h), 0) + h
out = b"".join(frame(i) for i in range(0, 8)) + b"\n" + json.dumps({"id": 0, "event": "ready", "pid": 1}).encode()
open(saved, "wb").write(out)
sys.stdout.buffer.write(out)
sys.stderr.buffer.write(frame(1))
sys.exit(real)
PY`;

describeSandboxContract('local (bubblewrap)', async () => ({
  factory: createLocalSandboxFactory({ callGraceMs: GRACE_MS }),
  hostile: {
    graceMs: GRACE_MS,
    takeChannelScript: TAKE_CHANNEL,
    // TESTING ONLY: commands hold the agent's channel on fd 3.
    forgeFactory: createLocalSandboxFactory({ callGraceMs: GRACE_MS, exposeChannelForTests: true }),
    markerScript: MARKERS,
  },
}));

/** Host pids whose command line starts with `argv` (NUL-separated in /proc/<pid>/cmdline). */
async function hostProcesses(argv: string[]): Promise<number[]> {
  const wanted = `${argv.join('\0')}\0`;
  const found: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.startsWith(wanted)) found.push(Number(name));
  }
  return found;
}

/** Whether `pid`'s chain of parents (host /proc) reaches `ancestor`. */
function descendsFrom(pid: number, ancestor: number): boolean {
  for (let p = pid, depth = 0; p > 1 && depth < 64; depth++) {
    if (p === ancestor) return true;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      p = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return false;
    }
  }
  return false;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('local sandbox (bubblewrap only)', () => {
  let workRoot: string;
  const sandboxes: LocalSandbox[] = [];
  const factory = (): LocalSandboxFactory => createLocalSandboxFactory({ workRoot });
  const create = async (options: Parameters<LocalSandboxFactory['create']>[0]): Promise<LocalSandbox> => {
    const sb = await factory().create(options);
    sandboxes.push(sb);
    return sb;
  };

  beforeAll(async () => {
    workRoot = await mkdtemp(path.join(os.tmpdir(), 'frognano-local-test-'));
    // A root worker's sandboxes run as an unprivileged uid, which must traverse (not list) it.
    await chmod(workRoot, 0o711);
  });

  afterAll(async () => {
    for (const sb of sandboxes) await sb.destroy();
    await rm(workRoot, { recursive: true, force: true });
  });

  it('says how to install bubblewrap when bwrap is missing', async () => {
    const err = await createLocalSandboxFactory({ bwrapPath: path.join(workRoot, 'no-such-bwrap') })
      .create({ jobId: 'missing' })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isAppError(err, 'SANDBOX_UNAVAILABLE')).toBe(true);
    expect((err as Error).message).toContain('apt-get install bubblewrap');
  });

  it('makes a private workspace named repo and removes it on destroy', async () => {
    const sb = await create({ jobId: 'job/42' });
    // <private dir>/disk/repo on the size-limited file system, <private dir>/repo without one.
    expect(sb.workdir).toMatch(new RegExp(`^${workRoot}/frognano-job-42-[^/]+/(disk/)?repo$`));
    expect((await sb.exec('basename "$PWD"')).stdout.toString()).toBe('repo\n');
    await sb.writeFile('made.txt', 'x');
    expect(await readFile(path.join(sb.workdir, 'made.txt'), 'utf8')).toBe('x');
    await sb.destroy();
    expect(existsSync(sb.workdir.replace(/\/(disk\/)?repo$/, ''))).toBe(false);
  });

  it('binds hostWorkdir read-write at the same path and leaves it on destroy', async () => {
    const host = await mkdtemp(path.join(workRoot, 'host-repo-'));
    await writeFile(path.join(host, 'from-host.txt'), 'hello from host\n');
    const sb = await create({ jobId: 'hostdir', hostWorkdir: host });
    expect(sb.workdir).toBe(host);
    const r = await sb.exec('pwd; cat from-host.txt; echo from-sandbox > made.txt');
    expect(r.stdout.toString()).toBe(`${host}\nhello from host\n`);
    expect(await readFile(path.join(host, 'made.txt'), 'utf8')).toBe('from-sandbox\n');
    await sb.destroy();
    expect(await readFile(path.join(host, 'from-host.txt'), 'utf8')).toBe('hello from host\n');
  });

  it('shows nothing of the host but system directories, as an unprivileged user', async () => {
    const marker = path.join(os.tmpdir(), `frognano-host-marker-${randomBytes(4).toString('hex')}`);
    await writeFile(marker, 'host secret\n');
    try {
      const sb = await create({ jobId: 'isolation' });
      const r = await sb.exec(
        `ls /; for p in ${marker} ${fileURLToPath(import.meta.url)} ${REPO_ROOT} /root /home /etc/shadow /etc/ssl/private /sys /run/secrets; do test -e "$p" && echo "VISIBLE $p"; done; id -u; grep CapEff /proc/self/status; touch /usr/x 2>&1 || true`,
      );
      const out = r.stdout.toString();
      expect(out).not.toContain('VISIBLE');
      expect(out.split('\n').slice(0, 5)).not.toContain('root');
      expect(out).toContain('1000\nCapEff:\t0000000000000000\n');
      expect(r.stdout.toString() + r.stderr.toString()).toContain('Read-only file system');
    } finally {
      await rm(marker, { force: true });
    }
  });

  it('denies nested user namespaces, setuid/setgid bits, device nodes and FIFOs (seccomp, --disable-userns)', async () => {
    const sb = await create({ jobId: 'kernel-surface' });
    const r = await sb.exec(
      [
        'unshare -Ur true; echo "unshare=$?"',
        'touch f d-keep; chmod 4755 f; echo "chmod4755=$?"; chmod u+s f; echo "u+s=$?"; chmod g+s f; echo "g+s=$?"',
        'mkdir -m 2755 sgid-dir; echo "mkdir2755=$?"',
        'mkfifo fifo; echo "mkfifo=$?"; mknod null c 1 3; echo "mknod=$?"',
        `python3 -c "import os; os.close(os.open('setuid-open', os.O_CREAT | os.O_WRONLY, 0o4755))"; echo "open4755=$?"`,
        'cp f copy && chmod 755 copy; echo "plain-chmod=$?"',
        'grep Seccomp: /proc/self/status; grep NoNewPrivs /proc/self/status',
      ].join('\n'),
      { timeoutMs: 20_000 },
    );
    const out = r.stdout.toString();
    for (const denied of ['unshare', 'chmod4755', 'u+s', 'g+s', 'mkdir2755', 'mkfifo', 'mknod', 'open4755']) {
      expect(out, r.stderr.toString()).toMatch(new RegExp(`^${denied.replace('+', '\\+')}=[1-9]`, 'm'));
    }
    expect(out).toContain('plain-chmod=0');
    expect(r.stderr.toString()).toContain(
      "PermissionError: [Errno 1] Operation not permitted: 'setuid-open'",
    );
    expect(out).toMatch(/Seccomp:\s+2/);
    expect(out).toMatch(/NoNewPrivs:\s+1/);
    // Nothing setuid, setgid, device-like or FIFO on the host side of the workspace.
    for (const name of await readdir(sb.workdir)) {
      const st = await lstat(path.join(sb.workdir, name));
      expect(st.mode & 0o6000, name).toBe(0);
      expect(st.isFIFO() || st.isCharacterDevice() || st.isBlockDevice(), name).toBe(false);
    }
  });

  it('ends an aborted call within the grace even when the agent itself stops answering', async () => {
    const graceMs = 1_000;
    const sb = await createLocalSandboxFactory({ workRoot, callGraceMs: graceMs }).create({
      jobId: 'frozen-agent',
    });
    sandboxes.push(sb);
    expect((await sb.exec('echo ok', { timeoutMs: 10_000 })).exitCode).toBe(0);
    const agents = await hostProcesses(['/usr/bin/node', '/run/frognano/agent.cjs']);
    const agent = agents.find((pid) => descendsFrom(pid, sb.hostPid));
    expect(agent).toBeDefined();
    const controller = new AbortController();
    const pending = sb.exec('sleep 300', { signal: controller.signal, timeoutMs: 600_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 300));
    process.kill(agent!, 'SIGSTOP'); // the sandbox's side of the channel no longer answers anything
    const abortedAt = Date.now();
    controller.abort();
    const err = await pending;
    expect(Date.now() - abortedAt).toBeLessThan(graceMs + 2_000);
    expect(isAppError(err, 'SANDBOX_PROTOCOL_VIOLATION')).toBe(true);
    expect((err as Error).message).toContain('an aborted command did not stop within 1000 ms');
    await waitFor('the frozen sandbox to be gone', async () => !alive(sb.hostPid), 10_000);
  });

  it('refuses a symlink in the repository that points to a host file', async () => {
    const host = await mkdtemp(path.join(workRoot, 'host-repo-'));
    const secretDir = await mkdtemp(path.join(workRoot, 'secret-'));
    const secret = path.join(secretDir, 'token.txt');
    await writeFile(secret, 'ghs_supersecret\n');
    await symlink(secret, path.join(host, 'link'));
    const sb = await create({ jobId: 'hostlink', hostWorkdir: host });
    for (const op of [sb.readFile('link'), sb.writeFile('link', 'pwned')]) {
      const err = await op.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SandboxFileError);
      expect((err as SandboxFileError).errno).toBe('EACCES');
      expect((err as SandboxFileError).path).toBe(`${host}/link`);
      expect((err as Error).message).not.toContain('supersecret');
    }
    expect(await readFile(secret, 'utf8')).toBe('ghs_supersecret\n');
  });

  it('keeps /tmp private to each sandbox', async () => {
    const tag = randomBytes(4).toString('hex');
    const a = await create({ jobId: 'tmp-a' });
    const b = await create({ jobId: 'tmp-b' });
    await a.exec(`echo a > /tmp/private-${tag}`);
    expect((await a.exec(`cat /tmp/private-${tag}`)).stdout.toString()).toBe('a\n');
    expect((await b.exec(`test -e /tmp/private-${tag}`)).exitCode).toBe(1);
    expect(existsSync(`/tmp/private-${tag}`)).toBe(false);
  });

  it('rejects pending and later calls with SANDBOX_GONE when bwrap dies', async () => {
    const sb = await create({ jobId: 'killed' });
    const pending = sb.exec('sleep 60', { timeoutMs: 30_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 100));
    process.kill(sb.hostPid, 'SIGKILL');
    expect(isAppError(await pending, 'SANDBOX_GONE')).toBe(true);
    const later = await sb.readFile('x').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAppError(later, 'SANDBOX_GONE')).toBe(true);
    await sb.destroy();
  });

  it('leaves no process behind when the worker dies (--die-with-parent)', async () => {
    const tag = String(7000 + Math.floor(Math.random() * 2000));
    const dir = await mkdtemp(path.join(workRoot, 'orphan-'));
    await chmod(dir, 0o711);
    const script = path.join(dir, 'worker.mts');
    const moduleUrl = new URL('../../../src/sandbox/local/local-sandbox.ts', import.meta.url).href;
    await writeFile(
      script,
      [
        `import { createLocalSandboxFactory } from ${JSON.stringify(moduleUrl)};`,
        `const sb = await createLocalSandboxFactory({ workRoot: ${JSON.stringify(dir)} }).create({ jobId: 'orphan' });`,
        // A command still running (background processes end with their command).
        `void sb.exec('sleep ${tag} > /dev/null 2>&1').catch(() => undefined);`,
        `await new Promise((resolve) => setTimeout(resolve, 1000));`,
        `console.log(JSON.stringify({ hostPid: sb.hostPid, cgroupDirs: sb.cgroupDirs }));`,
        `setInterval(() => undefined, 1000);`,
      ].join('\n'),
    );
    const worker = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        let err = '';
        const timer = setTimeout(() => reject(new Error(`worker did not start a sandbox: ${err}`)), 30_000);
        worker.stderr.on('data', (c: Buffer) => (err += c.toString()));
        worker.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          if (out.includes('\n')) {
            clearTimeout(timer);
            resolve(out);
          }
        });
        worker.once('exit', (code) => reject(new Error(`worker exited (${code}): ${err}`)));
      });
      const { hostPid, cgroupDirs } = JSON.parse(line) as { hostPid: number; cgroupDirs: string[] };
      expect(alive(hostPid)).toBe(true);
      expect(await hostProcesses(['sleep', tag])).toHaveLength(1);
      worker.kill('SIGKILL');
      await waitFor(
        'the sandbox processes to end',
        async () => !alive(hostPid) && (await hostProcesses(['sleep', tag])).length === 0,
        10_000,
      );
      // The killed worker could not clean up; its empty cgroups are ours to remove.
      for (const cgroupDir of cgroupDirs)
        await waitFor(
          'the orphan cgroup to be removable',
          () =>
            rmdir(cgroupDir).then(
              () => true,
              () => false,
            ),
          5_000,
        );
      // Its workspace file system too: the next factory's sweep unmounts it (owner pid gone).
      await sweepStaleWorkspaceDisks(dir, createSilentLogger());
      const mounts = await readFile('/proc/self/mountinfo', 'utf8');
      expect(mounts).not.toContain(`${dir}/`);
      expect((await readdir(dir)).filter((n) => n.startsWith('frognano-'))).toEqual([]);
    } finally {
      worker.kill('SIGKILL');
    }
  });

  describe('limits', () => {
    let sb: LocalSandbox;

    beforeAll(async () => {
      sb = await create({
        jobId: 'limits',
        limits: { maxProcesses: 48, memoryMiB: 256, cpuSeconds: 1, maxOutputBytes: 100 },
      });
    });

    it('contains a fork bomb', async () => {
      expect(
        sb.processLimit,
        'the process limit is not enforced on this host: run the tests as root on a machine with a writable cgroup pids controller, or as a non-root user',
      ).not.toBe('none');
      const script = [
        'import os, time',
        'pids, err = [], None',
        'try:',
        '    for i in range(400):',
        '        pid = os.fork()',
        '        if pid == 0:',
        '            time.sleep(30)',
        '            os._exit(0)',
        '        pids.append(pid)',
        'except OSError as e:',
        '    err = e.errno',
        'for p in pids: os.kill(p, 9)',
        'for p in pids: os.waitpid(p, 0)',
        'print(len(pids), err)',
      ].join('\n');
      const r = await sb.exec(['/usr/bin/python3', '-c', script], {
        timeoutMs: 20_000,
        maxOutputBytes: 1000,
      });
      expect(r.exitCode, r.stderr.toString()).toBe(0);
      const [count, errno] = r.stdout.toString().trim().split(' ');
      expect(Number(count)).toBeLessThan(48);
      expect(errno).toBe('11'); // EAGAIN
      expect((await sb.exec('echo still alive')).stdout.toString()).toBe('still alive\n');
    });

    it('contains a memory hog', async () => {
      const r = await sb.exec(['/usr/bin/python3', '-c', 'b = bytearray(1024 * 1024 * 1024)'], {
        timeoutMs: 20_000,
        maxOutputBytes: 10_000,
      });
      expect(r.exitCode).toBe(1);
      expect(r.stderr.toString()).toContain('MemoryError');
    });

    it('stops a command at its CPU-time limit', async () => {
      const r = await sb.exec('while :; do :; done', { timeoutMs: 30_000 });
      expect(r.timedOut).toBe(false);
      expect(['SIGXCPU', 'SIGKILL']).toContain(r.signal);
    });

    it('caps output at the sandbox maxOutputBytes by default', async () => {
      const r = await sb.exec('head -c 1000 /dev/zero');
      expect(r.stdout.length).toBe(100);
      expect(r.outputTruncated).toBe(true);
    });
  });
});
