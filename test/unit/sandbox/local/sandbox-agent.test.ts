import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile, lstat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import type { Duplex } from 'node:stream';
import { AgentConnection, AgentRequestError } from '../../../../src/sandbox/local/agent-connection.js';

// The agent's confinement logic, run directly on the host (no bubblewrap): the cases the shared
// contract suite does not reach.
const AGENT = fileURLToPath(new URL('../../../../src/sandbox/local/sandbox-agent.cjs', import.meta.url));
const LAUNCHER = fileURLToPath(new URL('../../../../native/build/sandbox-exec', import.meta.url));
const LIMITS = { maxHeaderBytes: 1 << 20, maxBodyBytes: 1 << 20, deadlineMs: 20_000 };

describe('sandbox agent', () => {
  let root: string;
  let ws: string;
  let child: ChildProcess;
  let conn: AgentConnection;
  const request = (header: Record<string, unknown> & { op: string }, blobs: Buffer[] = []) =>
    conn.request(header, blobs, LIMITS);

  const failure = async (
    header: Record<string, unknown> & { op: string },
    blobs: Buffer[] = [],
  ): Promise<AgentRequestError> => {
    const err = await request(header, blobs).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AgentRequestError);
    return err as AgentRequestError;
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'frognano-agent-test-'));
    ws = path.join(root, 'repo');
    await mkdir(ws);
    await writeFile(path.join(root, 'outside.txt'), 'outside\n');
    child = spawn(
      process.execPath,
      [AGENT, JSON.stringify({ workdir: ws, env: { PATH: '/usr/bin:/bin' }, launcher: LAUNCHER })],
      { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] },
    );
    conn = new AgentConnection(child.stdio[3] as Duplex);
    await conn.ready;
  });

  afterAll(async () => {
    (child.stdio[3] as Duplex).end();
    await new Promise((resolve) =>
      child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve),
    );
    await rm(root, { recursive: true, force: true });
  });

  it('writes through a dangling symlink inside the workspace by creating its target', async () => {
    await symlink('made-later.txt', path.join(ws, 'later'));
    await request({ op: 'writeFile', path: 'later' }, [Buffer.from('made\n')]);
    expect(await readFile(path.join(ws, 'made-later.txt'), 'utf8')).toBe('made\n');
    expect((await lstat(path.join(ws, 'later'))).isSymbolicLink()).toBe(true);
  });

  it('refuses a symlink chain that ends outside, and a relative escape', async () => {
    await symlink('../outside.txt', path.join(ws, 'hop2'));
    await symlink('hop2', path.join(ws, 'hop1'));
    expect((await failure({ op: 'readFile', path: 'hop1' })).errno).toBe('EACCES');
    expect((await failure({ op: 'writeFile', path: 'hop1' }, [Buffer.from('x')])).errno).toBe('EACCES');
    expect((await failure({ op: 'readFile', path: 'sub/../../outside.txt' })).errno).toBe('EACCES');
    expect(await readFile(path.join(root, 'outside.txt'), 'utf8')).toBe('outside\n');
  });

  it('reports a symlink loop as an error of the path, not a hang', async () => {
    await symlink('loop-b', path.join(ws, 'loop-a'));
    await symlink('loop-a', path.join(ws, 'loop-b'));
    const err = await failure({ op: 'readFile', path: 'loop-a' });
    expect(err.kind).toBe('file');
    expect(err.path).toBe(`${ws}/loop-a`);
  });

  it('refuses to read a FIFO instead of blocking on it', async () => {
    // Made from the host: commands in the sandbox cannot make FIFOs (seccomp).
    expect(spawnSync('mkfifo', [path.join(ws, 'pipe')]).status).toBe(0);
    expect((await failure({ op: 'readFile', path: 'pipe' })).errno).toBe('EINVAL');
  });

  it('does not descend into symlinked directories when listing (no cycles, no escape)', async () => {
    await mkdir(path.join(ws, 'tree/a'), { recursive: true });
    await writeFile(path.join(ws, 'tree/a/f.txt'), 'f');
    await symlink('..', path.join(ws, 'tree/a/up'));
    await symlink(root, path.join(ws, 'tree/out'));
    const r = await request({ op: 'list', path: 'tree' });
    expect(r.header.files).toEqual(['a/f.txt']);
  });

  it('replaces a symlink with a regular file when extracting, instead of writing through it', async () => {
    await symlink('../outside.txt', path.join(ws, 'replace-me'));
    await request({ op: 'put', kind: 'file', path: 'replace-me', mode: 0o755 }, [Buffer.from('new\n')]);
    const st = await lstat(path.join(ws, 'replace-me'));
    expect(st.isFile()).toBe(true);
    expect(st.mode & 0o777).toBe(0o755);
    expect(await readFile(path.join(root, 'outside.txt'), 'utf8')).toBe('outside\n');
    expect((await failure({ op: 'put', kind: 'file', path: '../x' })).errno).toBe('EACCES');
  });

  it('reports an argv command that does not exist as an exec error', async () => {
    const err = await failure({ op: 'exec', argv: ['no-such-command-frognano'] });
    expect(err.kind).toBe('exec');
  });

  // The agent runs on the host here, whose /proc has nothing mounted below it: sandbox-exec gives
  // every command a pid namespace and /proc of its own (what happens in a sandbox bwrap starts
  // unprivileged).
  it('runs each command in its own pid namespace: the agent is not there, nothing outlives it', async () => {
    const tag = String(70000 + Math.floor(Math.random() * 9999));
    const r = await request({
      op: 'exec',
      script: `echo "$$"; ls /proc | grep -c '^[0-9]'; (setsid sleep ${tag} &); test -e /proc/${child.pid}/fd && echo agent-visible; exit 0`,
      timeoutMs: 10_000,
    });
    const [pid, count] = r.blobs[0]!.toString().trim().split('\n');
    expect(pid).toBe('2');
    expect(Number(count)).toBeLessThan(8);
    expect(r.blobs[0]!.toString()).not.toContain('agent-visible');
    const { readdirSync, readFileSync } = await import('node:fs');
    const left = readdirSync('/proc').filter((n) => {
      try {
        return /^\d+$/.test(n) && readFileSync(`/proc/${n}/cmdline`, 'utf8') === `sleep\0${tag}\0`;
      } catch {
        return false;
      }
    });
    expect(left).toEqual([]);
  });

  it('reports signals and timeouts through the pid namespace like a plain child', async () => {
    const term = await request({ op: 'exec', script: 'echo before; kill -TERM $$', timeoutMs: 10_000 });
    expect([term.header.exitCode, term.header.signal, term.blobs[0]!.toString()]).toEqual([
      null,
      'SIGTERM',
      'before\n',
    ]);
    const started = Date.now();
    const slow = await request({ op: 'exec', script: '(setsid sleep 60 &); sleep 60', timeoutMs: 300 });
    expect([slow.header.timedOut, slow.header.signal]).toEqual([true, 'SIGKILL']);
    expect(Date.now() - started).toBeLessThan(3_000);
    const code = await request({ op: 'exec', argv: ['bash', '-c', 'exit 7'], timeoutMs: 10_000 });
    expect(code.header.exitCode).toBe(7);
  });
});
