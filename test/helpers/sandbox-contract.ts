import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Readable } from 'node:stream';
import tarStream from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../src/app-error.js';
import { probeEgress } from '../../src/sandbox/egress-probe.js';
import { SandboxFileError, type Sandbox, type SandboxFactory } from '../../src/sandbox/sandbox.js';
import type { PathPattern } from '../../src/sandbox/path-pattern.js';

/**
 * The shared contract of every sandbox driver (DESIGN.md "Contracts"): each driver's integration
 * test calls {@link describeSandboxContract} with a setup that returns its factory (the Kubernetes
 * driver against its stand-in API server, the local driver with real bubblewrap).
 *
 * One sandbox serves most tests (each test works in its own sub-directory); lifecycle tests create
 * their own. Needs in the sandbox image: bash, coreutils (cat, head, tr, ln, stat, readlink,
 * printf, sleep). Every wait is bounded by the command timeouts used here.
 */
/**
 * What the hostile section needs from a driver (DESIGN.md: "Nothing a command inside does can change,
 * delay or enlarge what the worker receives").
 */
export interface HostileHooks {
  /** Grace (ms) the driver adds to a call's own timeout for its host-side deadline (as configured). */
  graceMs: number;
  /**
   * A bash script that tries from inside to take the driver's channel to the worker (open, steal
   * or trace whatever carries it) and write forged replies into it. It must print `taken N`
   * last, N the number of attempts that got a writable handle, and exit 3.
   */
  takeChannelScript?: string;
  /**
   * TESTING ONLY: a factory of the same driver whose commands hold the channel to the worker on
   * fd 3 (what a command that broke the isolation would hold), so forged frames reach the worker.
   */
  forgeFactory?: SandboxFactory;
  /**
   * A bash script that prints, on stdout and stderr, the driver's own markers (end-of-output
   * trailers, status lines, exit reports) claiming exit `$1`, with whatever it can learn of the
   * current call, saves what it printed to stdout in the file `$2`, and exits with `$3`.
   */
  markerScript: string;
}

/** Test process RSS may grow by at most this much while a hostile command runs (bytes). */
export const HOSTILE_RSS_GROWTH_BOUND = 128 * 1024 * 1024;
/** Scheduling slack allowed on top of a call's deadline plus grace in the hostile tests (ms). */
export const HOSTILE_SLACK_MS = 2_000;

export function describeSandboxContract(
  name: string,
  setup: () => Promise<{ factory: SandboxFactory; cleanup?: () => Promise<void>; hostile: HostileHooks }>,
): void {
  describe(`sandbox contract: ${name}`, () => {
    const canaryName = 'FROGNANO_CONTRACT_CANARY';
    const canaryValue = `canary-${randomBytes(12).toString('hex')}`;
    let factory: SandboxFactory;
    let cleanup: (() => Promise<void>) | undefined;
    let hostile: HostileHooks;
    let sb: Sandbox;
    const created: Sandbox[] = [];
    let counter = 0;
    /** A fresh directory name (relative to the workdir) for one test. */
    const freshDir = (): string => `case-${++counter}-${randomBytes(3).toString('hex')}`;
    const sh = async (script: string): Promise<string> => {
      const r = await sb.exec(script, { timeoutMs: 15_000 });
      expect(r.exitCode, `${script}\n${r.stderr.toString()}`).toBe(0);
      return r.stdout.toString('utf8');
    };
    const create = async (jobId: string): Promise<Sandbox> => {
      const s = await factory.create({ jobId });
      created.push(s);
      return s;
    };
    const fileError = async (p: Promise<unknown>): Promise<SandboxFileError> => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SandboxFileError);
      return err as SandboxFileError;
    };
    const rejection = async (p: Promise<unknown>): Promise<unknown> =>
      p.then(
        () => {
          throw new Error('expected a rejection');
        },
        (e: unknown) => e,
      );

    beforeAll(async () => {
      // A secret in the worker's environment that must not be visible in the sandbox.
      process.env[canaryName] = canaryValue;
      ({ factory, cleanup, hostile } = await setup());
      sb = await create('contract');
    });

    afterAll(async () => {
      for (const s of created) await s.destroy();
      await cleanup?.();
      delete process.env[canaryName];
    });

    describe('exec', () => {
      it('reports exit codes of argv and script commands', async () => {
        const a = await sb.exec(['bash', '-c', 'exit 7'], { timeoutMs: 10_000 });
        expect([a.exitCode, a.signal, a.timedOut, a.outputTruncated]).toEqual([7, null, false, false]);
        expect((await sb.exec(['false'], { timeoutMs: 10_000 })).exitCode).toBe(1);
        expect((await sb.exec('true', { timeoutMs: 10_000 })).exitCode).toBe(0);
        expect((await sb.exec('exit 42', { timeoutMs: 10_000 })).exitCode).toBe(42);
      });

      it('keeps stdout and stderr apart', async () => {
        const r = await sb.exec('echo out; echo err 1>&2; echo out2', { timeoutMs: 10_000 });
        expect(r.stdout.toString()).toBe('out\nout2\n');
        expect(r.stderr.toString()).toBe('err\n');
      });

      it('reports the signal that ended the command', async () => {
        const r = await sb.exec('echo before; kill -TERM $$', { timeoutMs: 10_000 });
        expect(r.exitCode).toBeNull();
        expect(r.signal).toBe('SIGTERM');
        expect(r.stdout.toString()).toBe('before\n');
      });

      it('passes stdin, bytes or text', async () => {
        const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10, 13, 0]);
        const r = await sb.exec(['cat'], { stdin: bytes, timeoutMs: 10_000 });
        expect(r.stdout.equals(bytes)).toBe(true);
        const t = await sb.exec('read -r x; echo "got $x"', { stdin: 'héllo\n', timeoutMs: 10_000 });
        expect(t.stdout.toString('utf8')).toBe('got héllo\n');
      });

      it('merges env over a scrubbed base environment', async () => {
        const r = await sb.exec('printf "%s|%s|%s" "$FOO" "${HOME:+home}" "${PATH:+path}"', {
          env: { FOO: 'bar baz' },
          timeoutMs: 10_000,
        });
        expect(r.stdout.toString()).toBe('bar baz|home|path');
        const next = await sb.exec('printf "%s" "${FOO-unset}"', { timeoutMs: 10_000 });
        expect(next.stdout.toString()).toBe('unset');
      });

      it('does not let the worker environment in (canary secret)', async () => {
        expect(process.env[canaryName]).toBe(canaryValue);
        const r = await sb.exec('env; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"', {
          timeoutMs: 10_000,
        });
        expect(r.exitCode).toBe(0);
        expect(r.stdout.toString()).toContain('PATH=');
        expect(r.stdout.toString()).not.toContain(canaryValue);
        expect(r.stdout.toString()).not.toContain(canaryName);
      });

      it('runs in the workdir by default and in cwd when given', async () => {
        expect(await sh('pwd')).toBe(`${sb.workdir}\n`);
        const dir = freshDir();
        await sh(`mkdir -p ${dir}/sub`);
        const r = await sb.exec('pwd', { cwd: `${sb.workdir}/${dir}/sub`, timeoutMs: 10_000 });
        expect(r.stdout.toString()).toBe(`${sb.workdir}/${dir}/sub\n`);
      });

      it('preserves bytes that are not UTF-8', async () => {
        const r = await sb.exec("printf '\\377\\376\\000\\200abc\\r\\n'", { timeoutMs: 10_000 });
        expect(r.stdout.equals(Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x61, 0x62, 0x63, 0x0d, 0x0a]))).toBe(
          true,
        );
      });

      it('delivers 20 MB of output whole when maxOutputBytes allows it', async () => {
        const size = 20_000_000;
        const r = await sb.exec(`head -c ${size} /dev/zero | tr '\\0' 'a'; echo done >&2`, {
          maxOutputBytes: 32 * 1024 * 1024,
          timeoutMs: 30_000,
        });
        expect(r.exitCode).toBe(0);
        expect(r.outputTruncated).toBe(false);
        expect(r.stdout.length).toBe(size);
        expect(r.stdout.equals(Buffer.alloc(size, 'a'))).toBe(true);
        expect(r.stderr.toString()).toBe('done\n');
      });

      it('keeps only the first maxOutputBytes of each stream and says so', async () => {
        const r = await sb.exec(
          "head -c 5000 /dev/zero | tr '\\0' 'o'; head -c 3000 /dev/zero | tr '\\0' 'e' >&2",
          {
            maxOutputBytes: 1000,
            timeoutMs: 10_000,
          },
        );
        expect(r.exitCode).toBe(0);
        expect(r.outputTruncated).toBe(true);
        expect(r.stdout.equals(Buffer.alloc(1000, 'o'))).toBe(true);
        expect(r.stderr.equals(Buffer.alloc(1000, 'e'))).toBe(true);
      });

      it('kills the whole process group on timeout', async () => {
        const tag = 4000 + Math.floor(Math.random() * 5000);
        const r = await sb.exec(`echo started; sleep ${tag} & sleep ${tag}`, { timeoutMs: 700 });
        expect(r.timedOut).toBe(true);
        expect(r.exitCode).toBeNull();
        expect(r.signal).toBe('SIGKILL');
        expect(r.stdout.toString()).toBe('started\n');
        const left = await sb.exec(
          `for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < "$f"; echo; done 2>/dev/null | grep -c "^sleep ${tag}" || true`,
          { timeoutMs: 10_000 },
        );
        expect(left.stdout.toString().trim()).toBe('0');
      });

      it('kills the command when the signal aborts', async () => {
        const controller = new AbortController();
        const pending = sb.exec('echo started; sleep 60', { signal: controller.signal, timeoutMs: 30_000 });
        setTimeout(() => controller.abort(), 300);
        const r = await pending;
        expect(r.timedOut).toBe(false);
        expect(r.signal).toBe('SIGKILL');
        expect(r.exitCode).toBeNull();
      });

      it('runs commands concurrently', async () => {
        const [slow, fast] = await Promise.all([
          sb.exec('sleep 0.4; echo slow', { timeoutMs: 10_000 }),
          sb.exec('echo fast', { timeoutMs: 10_000 }),
        ]);
        expect(slow.stdout.toString()).toBe('slow\n');
        expect(fast.stdout.toString()).toBe('fast\n');
      });

      it('rejects with SANDBOX_EXEC_FAILED when the command cannot start', async () => {
        const err = await rejection(sb.exec(['/nonexistent/frognano-command'], { timeoutMs: 10_000 }));
        expect(isAppError(err, 'SANDBOX_EXEC_FAILED')).toBe(true);
      });

      it('has no network', async () => {
        const server = net.createServer((socket) => {
          socket.on('error', () => undefined); // the probe closes at once: a reset is expected
          socket.end('hello\n');
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        try {
          const port = (server.address() as net.AddressInfo).port;
          const result = await probeEgress(sb, [{ name: 'host-server', url: `http://127.0.0.1:${port}` }], {
            timeoutMs: 3_000,
          });
          expect(result).toEqual({ blocked: true, reached: [] });
        } finally {
          await new Promise((resolve) => server.close(resolve));
        }
      });
    });

    describe('files', () => {
      it('writes and reads bytes and text, replacing content', async () => {
        const dir = freshDir();
        const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x0a]);
        await sb.writeFile(`${dir}/bin.dat`, bytes);
        expect((await sb.readFile(`${dir}/bin.dat`)).equals(bytes)).toBe(true);
        await sb.writeFile(`${dir}/t.txt`, 'a longer first text\n');
        await sb.writeFile(`${dir}/t.txt`, 'short\n');
        expect((await sb.readFile(`${dir}/t.txt`)).toString()).toBe('short\n');
        expect(await sh(`cat ${dir}/t.txt`)).toBe('short\n');
        expect((await sb.readFile(`${sb.workdir}/${dir}/t.txt`)).toString()).toBe('short\n');
      });

      it('creates parent directories unless mkdirs is false', async () => {
        const dir = freshDir();
        await sb.writeFile(`${dir}/a/b/c.txt`, 'deep');
        expect(await sh(`cat ${dir}/a/b/c.txt`)).toBe('deep');
        const err = await fileError(sb.writeFile(`${dir}/x/y.txt`, 'no', { mkdirs: false }));
        expect(err.errno).toBe('ENOENT');
        expect(err.path).toBe(`${sb.workdir}/${dir}/x/y.txt`);
      });

      it('reports ENOENT, EISDIR and EFBIG with the path as named', async () => {
        const dir = freshDir();
        const missing = await fileError(sb.readFile(`${dir}/nope/missing.py`));
        expect(missing.errno).toBe('ENOENT');
        expect(missing.path).toBe(`${sb.workdir}/${dir}/nope/missing.py`);
        await sh(`mkdir -p ${dir}/src && head -c 100 /dev/zero > ${dir}/big`);
        const isDir = await fileError(sb.readFile(`${dir}/src`));
        expect(isDir.errno).toBe('EISDIR');
        expect(isDir.path).toBe(`${sb.workdir}/${dir}/src`);
        expect((await fileError(sb.writeFile(`${dir}/src`, 'x'))).errno).toBe('EISDIR');
        expect((await fileError(sb.readFile(`${dir}/big`, { maxBytes: 99 }))).errno).toBe('EFBIG');
        expect((await sb.readFile(`${dir}/big`, { maxBytes: 100 })).length).toBe(100);
      });

      it('refuses paths outside the workspace', async () => {
        for (const p of ['../outside.txt', '/etc/passwd', '/etc/frognano-new']) {
          expect((await fileError(sb.readFile(p))).errno).toBe('EACCES');
          expect((await fileError(sb.writeFile(p, 'x'))).errno).toBe('EACCES');
        }
        expect((await sb.exec('test -e /etc/frognano-new', { timeoutMs: 10_000 })).exitCode).not.toBe(0);
      });

      it('lists files recursively, relative to the directory, without .git and directories', async () => {
        const dir = freshDir();
        await sh(
          `mkdir -p ${dir}/src/pkg ${dir}/.git/objects ${dir}/empty && touch ${dir}/README.md ${dir}/src/a.py ${dir}/src/pkg/b.py ${dir}/.git/HEAD ${dir}/.gitignore`,
        );
        const all = await sb.list(dir);
        expect(all.truncated).toBe(false);
        expect([...all.files].sort()).toEqual(['.gitignore', 'README.md', 'src/a.py', 'src/pkg/b.py']);
        const sub = await sb.list(`${sb.workdir}/${dir}/src`);
        expect([...sub.files].sort()).toEqual(['a.py', 'pkg/b.py']);
        const limited = await sb.list(dir, { limit: 2 });
        expect(limited.files).toHaveLength(2);
        expect(limited.truncated).toBe(true);
        const whole = await sb.list();
        expect(whole.files).toContain(`${dir}/src/pkg/b.py`);
        expect((await fileError(sb.list(`${dir}/missing`))).errno).toBe('ENOENT');
      });

      it('finds the files a path pattern matches, by the entry rules of list, without a cap', async () => {
        const dir = freshDir();
        await sh(
          `mkdir -p ${dir}/src/pkg ${dir}/src/.hidden ${dir}/.git/x ${dir}/docs && touch ${dir}/top.py ${dir}/src/a.py ${dir}/src/pkg/b.py ${dir}/src/pkg/c.txt ${dir}/src/.hidden/d.py ${dir}/src/.e.py ${dir}/.git/x/f.py ${dir}/docs/g.py && ln -s a.py ${dir}/src/alias.py && ln -s /etc/passwd ${dir}/src/out.py`,
        );
        const find = async (pattern: PathPattern, at = dir) => [...(await sb.findFiles(at, pattern))].sort();
        const any = { kind: 'any' } as const;
        const py = { kind: 'regex', source: '^.*\\.py$', hidden: false } as const;
        expect(await find([any, py])).toEqual([
          'docs/g.py',
          'src/a.py',
          'src/alias.py',
          'src/pkg/b.py',
          'top.py',
        ]);
        expect(await find([{ kind: 'literal', name: 'src' }, py])).toEqual(['src/a.py', 'src/alias.py']);
        expect(
          await find([
            { kind: 'literal', name: 'src' },
            { ...py, hidden: true },
          ]),
        ).toEqual(['src/.e.py', 'src/a.py', 'src/alias.py']);
        expect(await find([{ kind: 'literal', name: 'src' }, any])).toEqual([
          'src/a.py',
          'src/alias.py',
          'src/pkg/b.py',
          'src/pkg/c.txt',
        ]);
        expect(await find([any, { kind: 'literal', name: 'b.py' }], `${dir}/src`)).toEqual(['pkg/b.py']);
        expect((await fileError(sb.findFiles(`${dir}/missing`, [any]))).errno).toBe('ENOENT');
        expect((await fileError(sb.findFiles('/etc', [any]))).errno).toBe('EACCES');
        const many = freshDir();
        await sh(`mkdir -p ${many} && cd ${many} && seq 1 1500 | sed 's/$/.txt/' | xargs touch`);
        expect(await sb.findFiles(many, [{ kind: 'regex', source: '^.*$', hidden: false }])).toHaveLength(
          1500,
        );
      });

      it('follows symlinks that stay inside the workspace', async () => {
        const dir = freshDir();
        await sh(
          `mkdir -p ${dir}/real && echo inside > ${dir}/real/f.txt && ln -s real/f.txt ${dir}/alias.txt && ln -s real ${dir}/dirlink`,
        );
        expect((await sb.readFile(`${dir}/alias.txt`)).toString()).toBe('inside\n');
        expect((await sb.readFile(`${dir}/dirlink/f.txt`)).toString()).toBe('inside\n');
        await sb.writeFile(`${dir}/alias.txt`, 'changed\n');
        expect(await sh(`cat ${dir}/real/f.txt`)).toBe('changed\n');
        expect([...(await sb.list(dir)).files].sort()).toEqual(['alias.txt', 'real/f.txt']);
      });

      it('never reads or writes through a symlink that leaves the workspace', async () => {
        const dir = freshDir();
        const before = await sh('cat /etc/passwd');
        const victim = `/tmp/frognano-victim-${randomBytes(4).toString('hex')}`;
        await sh(
          `mkdir -p ${dir} && cd ${dir} && ln -s /etc/passwd link && ln -s /etc etcdir && ln -s ../../../../../../.. up && ln -s ${victim} dangling && ln -s /tmp tmpdir`,
        );
        const named = ['link', 'etcdir/passwd', 'up/etc/passwd', 'dangling'].map((p) => `${dir}/${p}`);
        for (const p of [...named, `${sb.workdir}/${dir}/link`]) {
          const read = await fileError(sb.readFile(p));
          expect(read.errno).toBe('EACCES');
          expect(read.message).not.toContain('root:');
        }
        for (const p of ['link', 'etcdir/passwd', 'etcdir/frognano-new', 'dangling', 'tmpdir/new/file.txt']) {
          expect((await fileError(sb.writeFile(`${dir}/${p}`, 'pwned\n'))).errno).toBe('EACCES');
        }
        expect(await sh('cat /etc/passwd')).toBe(before);
        expect(
          (
            await sb.exec(`test -e ${victim} || test -e /tmp/new || test -e /etc/frognano-new`, {
              timeoutMs: 10_000,
            })
          ).exitCode,
        ).not.toBe(0);
        expect((await sb.list(dir)).files).toEqual([]);
      });
    });

    describe('copyIn', () => {
      const tarOf = async (
        entries: { header: Partial<tarStream.Header> & { name: string }; content?: string }[],
      ): Promise<Readable> => {
        const pack = tarStream.pack();
        for (const e of entries) pack.entry(e.header, e.content ?? '');
        pack.finalize();
        const chunks: Buffer[] = [];
        for await (const c of pack) chunks.push(c as Buffer);
        return Readable.from([Buffer.concat(chunks)]);
      };

      it('extracts nested directories, modes and symlinks', async () => {
        const top = freshDir();
        await sb.copyIn(
          await tarOf([
            { header: { name: `${top}/`, type: 'directory', mode: 0o755 } },
            { header: { name: `${top}/bin/run.sh`, mode: 0o755 }, content: '#!/bin/sh\necho ran\n' },
            { header: { name: `${top}/src/deep/nested/file.txt`, mode: 0o644 }, content: 'nested\n' },
            { header: { name: `${top}/ro.txt`, mode: 0o444 }, content: 'read only\n' },
            { header: { name: `${top}/link`, type: 'symlink', linkname: 'src/deep/nested/file.txt' } },
            { header: { name: `${top}/locked/`, type: 'directory', mode: 0o555 } },
            { header: { name: `${top}/locked/inner.txt`, mode: 0o644 }, content: 'inner\n' },
          ]),
          { timeoutMs: 30_000 },
        );
        expect(
          await sh(
            `cd ${top} && stat -c '%a %F %n' bin/run.sh ro.txt src/deep/nested/file.txt locked && readlink link && ./bin/run.sh`,
          ),
        ).toBe(
          '755 regular file bin/run.sh\n444 regular file ro.txt\n644 regular file src/deep/nested/file.txt\n555 directory locked\nsrc/deep/nested/file.txt\nran\n',
        );
        expect((await sb.readFile(`${top}/link`)).toString()).toBe('nested\n');
        expect((await sb.readFile(`${top}/locked/inner.txt`)).toString()).toBe('inner\n');
      });

      it('refuses entries with .. or absolute paths', async () => {
        const tag = randomBytes(4).toString('hex');
        for (const name of [`../escape-${tag}.txt`, `ok/../../escape-${tag}.txt`, `/tmp/escape-${tag}.txt`]) {
          const err = await rejection(
            sb.copyIn(await tarOf([{ header: { name }, content: 'x' }]), { timeoutMs: 10_000 }),
          );
          expect(isAppError(err, 'SANDBOX_COPY_FAILED')).toBe(true);
        }
        expect(
          (
            await sb.exec(`test -e ../escape-${tag}.txt || test -e /tmp/escape-${tag}.txt`, {
              timeoutMs: 10_000,
            })
          ).exitCode,
        ).not.toBe(0);
      });

      it('does not write through a symlink of the archive that leaves the workspace', async () => {
        const top = freshDir();
        const tag = randomBytes(4).toString('hex');
        const err = await rejection(
          sb.copyIn(
            await tarOf([
              { header: { name: `${top}/esc`, type: 'symlink', linkname: '/tmp' } },
              { header: { name: `${top}/esc/pwned-${tag}.txt` }, content: 'pwned' },
            ]),
            { timeoutMs: 10_000 },
          ),
        );
        expect(isAppError(err, 'SANDBOX_COPY_FAILED')).toBe(true);
        expect((await sb.exec(`test -e /tmp/pwned-${tag}.txt`, { timeoutMs: 10_000 })).exitCode).not.toBe(0);
      });

      it('rejects an archive that is not a tar', async () => {
        const err = await rejection(sb.copyIn(Readable.from([randomBytes(2048)]), { timeoutMs: 10_000 }));
        expect(isAppError(err, 'SANDBOX_COPY_FAILED')).toBe(true);
      });
    });

    describe('hostile commands (the sandbox\u2019s own plumbing)', () => {
      /** Settle `p` (value or error) and how long it took, in ms. */
      const settle = async <T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> => {
        const started = Date.now();
        try {
          return { value: await p, ms: Date.now() - started };
        } catch (error) {
          return { error, ms: Date.now() - started };
        }
      };
      /** Peak RSS of this process while `p` runs, above the RSS when it started (bytes). */
      const rssGrowth = async <T>(p: Promise<T>): Promise<{ result: T; growth: number }> => {
        const base = process.memoryUsage.rss();
        let peak = base;
        const timer = setInterval(() => {
          peak = Math.max(peak, process.memoryUsage.rss());
        }, 20);
        try {
          const result = await p;
          peak = Math.max(peak, process.memoryUsage.rss());
          return { result, growth: peak - base };
        } finally {
          clearInterval(timer);
        }
      };

      it('a command cannot take the channel to the worker; its true exit code and output come back', async () => {
        if (!hostile.takeChannelScript) return; // the driver has no channel a command could reach
        const r = await sb.exec(hostile.takeChannelScript, { timeoutMs: 60_000 });
        expect(r.stdout.toString().trim().split('\n').at(-1), r.stderr.toString()).toBe('taken 0');
        expect(r.exitCode).toBe(3);
        // The channel still carries only the agent's replies.
        expect((await sb.exec('echo still-here', { timeoutMs: 10_000 })).stdout.toString()).toBe(
          'still-here\n',
        );
      });

      it('printing the driver\u2019s own markers changes neither the exit code nor the output', async () => {
        const dir = freshDir();
        await sh(`mkdir -p ${dir}`);
        for (const [claimed, real] of [
          [0, 1],
          [1, 0],
          [137, 0],
          [0, 42],
        ] as const) {
          const saved = `${dir}/printed-${claimed}-${real}`;
          const script = `set -- ${claimed} ${saved} ${real}\n${hostile.markerScript}`;
          const r = await sb.exec(script, { timeoutMs: 20_000 });
          expect(r.exitCode, r.stderr.toString()).toBe(real);
          expect(r.timedOut).toBe(false);
          expect(r.signal).toBeNull();
          expect(r.stdout.equals(await sb.readFile(saved))).toBe(true);
          expect(r.stdout.length).toBeGreaterThan(0);
        }
      });

      it('output far above the cap is cut, the test process stays small', async () => {
        const { result: r, growth } = await rssGrowth(
          sb.exec('head -c 400000000 /dev/zero; echo done >&2; exit 5', {
            timeoutMs: 60_000,
            maxOutputBytes: 1024 * 1024,
          }),
        );
        expect(r.exitCode).toBe(5);
        expect(r.outputTruncated).toBe(true);
        expect(r.stdout.length).toBe(1024 * 1024);
        expect(r.stderr.toString()).toBe('done\n');
        expect(growth).toBeLessThan(HOSTILE_RSS_GROWTH_BOUND);
      });

      it('a process that escapes the command and holds its output cannot delay the call past its deadline', async () => {
        const s = await create('contract-escape');
        const timeoutMs = 1_000;
        const { value, error, ms } = await settle(
          s.exec('(setsid sh -c "sleep 120" &); setsid sleep 120 & echo started; sleep 120', { timeoutMs }),
        );
        expect(ms).toBeLessThan(timeoutMs + hostile.graceMs + HOSTILE_SLACK_MS);
        if (value) {
          expect(value.timedOut).toBe(true);
          expect(value.exitCode).toBeNull();
        } else {
          expect(isAppError(error, 'SANDBOX_PROTOCOL_VIOLATION')).toBe(true);
        }
      });

      describe('forged frames on the channel (what a command that broke the isolation would send)', () => {
        /** Bytes of one frame as the agent would write it. */
        const frame = (
          header: Record<string, unknown>,
          bodyLength: number,
          body = Buffer.alloc(0),
        ): Buffer => {
          const json = Buffer.from(JSON.stringify(header));
          const prefix = Buffer.alloc(8);
          prefix.writeUInt32BE(json.length, 0);
          prefix.writeUInt32BE(bodyLength, 4);
          return Buffer.concat([prefix, json, body]);
        };
        const cases: [string, Buffer][] = [
          ['a frame announcing a 4 GiB body', frame({ id: 1, ok: true, blobs: [0xffff_ffff] }, 0xffff_ffff)],
          [
            'a partial body',
            frame({ id: 2, ok: true, exitCode: 0, blobs: [1_000_000, 0] }, 1_000_000, Buffer.alloc(100, 'x')),
          ],
          ['garbage bytes', randomBytes(4096)],
          [
            'an unknown id',
            frame(
              {
                id: 987_654,
                ok: true,
                exitCode: 0,
                signal: null,
                timedOut: false,
                truncated: false,
                blobs: [0, 0],
              },
              0,
            ),
          ],
          ['a repeated id (a second ready)', frame({ id: 0, event: 'ready', pid: 1, blobs: [] }, 0)],
          [
            'a repeated id (an answered request)',
            frame(
              {
                id: 1,
                ok: true,
                exitCode: 0,
                signal: null,
                timedOut: false,
                truncated: false,
                blobs: [0, 0],
              },
              0,
            ),
          ],
        ];

        it.each(cases)(
          '%s: the call fails within its deadline, the sandbox is destroyed',
          async (_name, bytes) => {
            if (!hostile.forgeFactory) return; // the driver's commands can never write onto its channel
            const s = await hostile.forgeFactory.create({ jobId: 'contract-forge' });
            created.push(s);
            expect((await s.exec('echo ok', { timeoutMs: 10_000 })).exitCode).toBe(0);
            const timeoutMs = 2_000;
            const { result, growth } = await rssGrowth(
              settle(
                s.exec('cat >&3; sleep 30', {
                  stdin: bytes,
                  timeoutMs,
                  maxOutputBytes: 1024 * 1024,
                }),
              ),
            );
            expect(result.ms).toBeLessThan(timeoutMs + hostile.graceMs + HOSTILE_SLACK_MS);
            expect(result.value).toBeUndefined();
            expect(isAppError(result.error, 'SANDBOX_PROTOCOL_VIOLATION')).toBe(true);
            expect((result.error as Error).message).toMatch(/^the sandbox broke its protocol: /);
            expect(growth).toBeLessThan(HOSTILE_RSS_GROWTH_BOUND);
            // Destroyed: every later call fails at once.
            const later = await settle(s.exec('echo again', { timeoutMs: 5_000 }));
            expect(later.value).toBeUndefined();
            expect(later.ms).toBeLessThan(1_000);
          },
        );

        it('a command that ends normally is reported as it ended, also in a sandbox that could be forged', async () => {
          if (!hostile.forgeFactory) return;
          const s = await hostile.forgeFactory.create({ jobId: 'contract-forge-honest' });
          created.push(s);
          for (const code of [0, 1, 2]) {
            const r = await s.exec(`echo out; exit ${code}`, { timeoutMs: 10_000 });
            expect([r.exitCode, r.stdout.toString()]).toEqual([code, 'out\n']);
          }
        });
      });

      it('cancelling ends the call within 10 s whatever the command does', async () => {
        const s = await create('contract-cancel');
        const controller = new AbortController();
        const pending = settle(
          s.exec('trap "" TERM INT HUP; (setsid sleep 300 &); exec 1>&- 2>&-; sleep 300', {
            signal: controller.signal,
            timeoutMs: 600_000,
          }),
        );
        setTimeout(() => controller.abort(), 300);
        const { ms } = await pending;
        expect(ms).toBeLessThan(300 + 10_000);
      });
    });

    describe('lifecycle', () => {
      it('destroy is idempotent and later calls reject with SANDBOX_GONE', async () => {
        const s = await create('contract-destroy');
        expect((await s.exec('echo alive', { timeoutMs: 10_000 })).stdout.toString()).toBe('alive\n');
        const pending = s.exec('sleep 60', { timeoutMs: 30_000 });
        const pendingError = rejection(pending);
        await Promise.all([s.destroy(), s.destroy()]);
        await s.destroy();
        expect(isAppError(await pendingError, 'SANDBOX_GONE')).toBe(true);
        expect(isAppError(await rejection(s.exec('true')), 'SANDBOX_GONE')).toBe(true);
        expect(isAppError(await rejection(s.readFile('x')), 'SANDBOX_GONE')).toBe(true);
        expect(isAppError(await rejection(s.writeFile('x', 'y')), 'SANDBOX_GONE')).toBe(true);
        expect(isAppError(await rejection(s.list()), 'SANDBOX_GONE')).toBe(true);
        expect(
          isAppError(await rejection(s.copyIn(Readable.from([Buffer.alloc(1024)]))), 'SANDBOX_GONE'),
        ).toBe(true);
      });
    });
  });
}
