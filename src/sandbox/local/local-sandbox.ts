import { spawn, type ChildProcess } from 'node:child_process';
import { constants as fsConstants, existsSync } from 'node:fs';
import { access, chmod, mkdir, mkdtemp, readdir, realpath, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import tarStream from 'tar-stream';
import { z } from 'zod';
import { AppError } from '../../app-error.js';
import { createSilentLogger, type Logger } from '../../observability/logger.js';
import {
  SandboxFileError,
  type CreateSandboxOptions,
  type ExecOptions,
  type ExecResult,
  type Sandbox,
  type SandboxFactory,
  type SandboxLimits,
  type SandboxSettings,
} from '../sandbox.js';
import { AgentConnection, AgentRequestError } from './agent-connection.js';
import {
  buildBwrapArgs,
  LIMITS_FILE,
  limitsScript,
  probeHostLayout,
  sandboxEtcFiles,
  type HostLayout,
} from './bwrap-args.js';
import { quantityMiB } from '../quantity.js';
import { isSandboxFolderOf, jobFolders, sandboxFolderPrefix, writeOwner } from './leftover-folders.js';
import { createPidsCgroup, sweepStalePidsCgroups, type PidsCgroup } from './pids-cgroup.js';

/**
 * Limits used when neither the factory's `defaultLimits` nor `create()` set them. What each one
 * really does in this driver:
 *
 * - `cpuSeconds` → `RLIMIT_CPU` (bash `ulimit -t`) on every process a command starts, each
 *   counting its own CPU time (SIGXCPU, then SIGKILL). Enforced for root too.
 * - `memoryMiB` → `RLIMIT_AS` (`ulimit -v`) per process: virtual address space, not resident
 *   memory, so runtimes that reserve large regions up front (JVM heaps, wasm) need a higher value.
 *   Enforced for root too. There is no limit on the sandbox's total memory.
 * - `maxProcesses` → a per-sandbox cgroup `pids.max` (counts threads) where a writable pids
 *   controller exists (cgroup v1 `pids` hierarchy, or cgroup v2 with pids delegated), and
 *   `RLIMIT_NPROC` (`ulimit -u`) per user namespace. When the worker runs as root, RLIMIT_NPROC is
 *   NOT enforced (the kernel exempts host uid 0), so only the cgroup contains a fork bomb; without
 *   one a warning is logged at create() and the sandbox's `processLimit` says `none`.
 * - `maxOutputBytes` → bytes kept of each of stdout and stderr per command (the rest is read and
 *   dropped, `outputTruncated` set).
 * - `diskMiB` → size of the private `/tmp` (and `/dev/shm`) tmpfs; the workspace itself is a host
 *   directory and is not limited.
 *
 * Wall-clock limits are per command (`ExecOptions.timeoutMs`), no default.
 */
export const DEFAULT_LOCAL_LIMITS: Readonly<Required<Omit<SandboxLimits, 'diskMiB'>>> & { diskMiB: number } =
  {
    cpuSeconds: 900,
    memoryMiB: 4096,
    maxProcesses: 1024,
    maxOutputBytes: 10 * 1024 * 1024,
    diskMiB: 2048,
  };

/** Options of {@link createLocalSandboxFactory}. */
export interface LocalSandboxFactoryOptions {
  /** Path of the bubblewrap executable; default `bwrap` looked up in PATH. */
  bwrapPath?: string;
  logger?: Logger;
  /** Limits for sandboxes whose `create()` does not set them; merged over {@link DEFAULT_LOCAL_LIMITS}. */
  defaultLimits?: SandboxLimits;
  /** Host directory under which private workspaces are made; default `os.tmpdir()`. */
  workRoot?: string;
  /** Node binary that runs the in-sandbox agent; default `/usr/bin/node` when present, else this process's. */
  nodePath?: string;
  /**
   * TESTING/DEBUGGING ONLY: keep the host's network namespace, so the sandbox is online. Exists to
   * prove that the egress probe notices a sandbox that can reach out. Never set it in production.
   */
  shareNetwork?: boolean;
  /** How long create() waits for the agent to start, in ms; default 20 000. */
  startTimeoutMs?: number;
}

/** A sandbox of the local driver, with facts about how its limits are enforced. */
export interface LocalSandbox extends Sandbox {
  /** How `maxProcesses` is enforced: a per-sandbox pids cgroup, RLIMIT_NPROC only (non-root), or not at all. */
  readonly processLimit: 'cgroup' | 'rlimit' | 'none';
  /** Pid on the host of the bubblewrap process (for diagnostics and leak tests). */
  readonly hostPid: number;
  /** Host directory of the sandbox's pids cgroup, when it has one (diagnostics). */
  readonly cgroupDir: string | undefined;
}

/** The factory of the local driver; its sandboxes are {@link LocalSandbox}es. */
export interface LocalSandboxFactory extends SandboxFactory {
  create(options: CreateSandboxOptions): Promise<LocalSandbox>;
  removeLeftovers(jobId: string): Promise<string[]>;
  sweepLeftovers(activeJobIds: readonly string[]): Promise<string[]>;
}

/** The in-sandbox agent script, shipped next to this module (copied to dist/ by the build). */
const AGENT_SCRIPT = fileURLToPath(new URL('./sandbox-agent.cjs', import.meta.url));
/** Largest reply accepted from the agent, in bytes. */
const MAX_REPLY_BYTES = 1024 * 1024 * 1024;
/** Hard cap on `maxOutputBytes` (per stream), so that both streams fit in one reply. */
const MAX_OUTPUT_BYTES_PER_STREAM = 256 * 1024 * 1024;
const DEFAULT_COPY_TIMEOUT_MS = 300_000;
/** Bound on how long destroy() waits for the sandbox processes to be gone, in ms. */
const DESTROY_WAIT_MS = 5_000;
/** Tar payload kept in flight towards the agent during copyIn, in bytes. */
const COPY_WINDOW_BYTES = 16 * 1024 * 1024;

/**
 * Moves the shell into each cgroup given, then becomes bwrap (`exec`), so that bwrap and all it
 * starts are inside before the first fork. Arguments: count, that many cgroup.procs files, argv.
 */
const CGROUP_LAUNCHER =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';

/** Base environment of every command (`ExecOptions.env` is merged over it). */
function baseEnv(): Record<string, string> {
  return {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: '/tmp',
    TMPDIR: '/tmp',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    USER: 'sandbox',
    LOGNAME: 'sandbox',
    SHELL: '/bin/bash',
  };
}

/**
 * Create the factory of the local driver (`driver = 'local'`): one bubblewrap sandbox per
 * `create()`, each running one long-lived in-sandbox agent (`sandbox-agent.cjs` under
 * `/usr/bin/node`) that serves file operations and commands over a pipe, so a tool call costs a
 * round trip instead of a new sandbox.
 *
 * `create()` throws {@link AppError} `SANDBOX_UNAVAILABLE` when bwrap is missing (the message says
 * to install the Debian package `bubblewrap`), the host cannot make the namespaces, or the agent
 * does not start within `startTimeoutMs`.
 */
export function createLocalSandboxFactory(options: LocalSandboxFactoryOptions = {}): LocalSandboxFactory {
  const logger = options.logger ?? createSilentLogger();
  let layout: Promise<HostLayout> | undefined;
  let swept = false;
  return {
    driver: 'local',
    async create(createOptions: CreateSandboxOptions): Promise<LocalSandbox> {
      const bwrapPath = await findBwrap(options.bwrapPath);
      layout ??= probeHostLayout();
      if (!swept) {
        swept = true;
        await sweepStalePidsCgroups(logger);
      }
      const limits = {
        ...DEFAULT_LOCAL_LIMITS,
        ...stripUndefined(options.defaultLimits),
        ...stripUndefined(createOptions.limits),
        ...limitsFromSettings(createOptions.settings),
      };
      warnUnenforced(createOptions.settings, logger);
      return LocalSandboxImpl.start({
        bwrapPath,
        layout: await layout,
        limits,
        jobId: createOptions.jobId,
        hostWorkdir: createOptions.hostWorkdir,
        workRoot: options.workRoot ?? os.tmpdir(),
        nodePath: options.nodePath ?? (existsSync('/usr/bin/node') ? '/usr/bin/node' : process.execPath),
        shareNetwork: options.shareNetwork === true,
        startTimeoutMs: options.startTimeoutMs ?? 20_000,
        logger: logger.child({ sandbox: 'local', jobId: createOptions.jobId }),
      });
    },
    async removeLeftovers(jobId) {
      const found = await jobFolders(options.workRoot ?? os.tmpdir(), 'sandbox', jobId);
      for (const f of found) await removeTree(f.path, logger);
      return found.map((f) => f.path);
    },
    async sweepLeftovers(activeJobIds) {
      const found = (await jobFolders(options.workRoot ?? os.tmpdir(), 'sandbox')).filter(
        (f) => !activeJobIds.some((id) => isSandboxFolderOf(f.name, id)),
      );
      for (const f of found) await removeTree(f.path, logger);
      return found.map((f) => f.path);
    },
  };
}

/**
 * The limits this driver can take from the policy's sandbox settings: `limits.memory` →
 * `memoryMiB` (RLIMIT_AS), `limits.ephemeral-storage` → `diskMiB` (the private /tmp).
 */
function limitsFromSettings(settings: SandboxSettings | undefined): Partial<SandboxLimits> {
  const limits = settings?.resources?.limits ?? {};
  return {
    ...(limits.memory ? { memoryMiB: quantityMiB(limits.memory) } : {}),
    ...(limits['ephemeral-storage'] ? { diskMiB: quantityMiB(limits['ephemeral-storage']) } : {}),
  };
}

/** Settings a bubblewrap sandbox cannot apply are logged, never dropped silently. */
function warnUnenforced(settings: SandboxSettings | undefined, logger: Logger): void {
  const ignored = [
    ...(settings?.image ? [`image ${settings.image}`] : []),
    ...(settings?.runtimeClassName ? [`runtimeClassName ${settings.runtimeClassName}`] : []),
  ];
  if (ignored.length > 0) {
    logger.warn(
      { ignored },
      'the local sandbox driver runs host tools: these sandbox settings of the policy do not apply to it',
    );
  }
}

function stripUndefined<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

async function findBwrap(configured: string | undefined): Promise<string> {
  const candidates =
    configured !== undefined
      ? [configured]
      : (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin')
          .split(':')
          .filter(Boolean)
          .map((d) => path.join(d, 'bwrap'));
  for (const candidate of candidates) {
    try {
      await access(candidate, fsConstants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // try the next one
    }
  }
  throw new AppError(
    'SANDBOX_UNAVAILABLE',
    `bubblewrap is not installed (no executable ${configured ?? 'bwrap in PATH'}): install the Debian package bubblewrap (apt-get install bubblewrap)`,
    { retryable: false },
  );
}

interface StartParams {
  bwrapPath: string;
  layout: HostLayout;
  limits: typeof DEFAULT_LOCAL_LIMITS;
  jobId: string;
  hostWorkdir: string | undefined;
  workRoot: string;
  nodePath: string;
  shareNetwork: boolean;
  startTimeoutMs: number;
  logger: Logger;
}

const SYSTEM_DIRS = ['/usr', '/proc', '/dev', '/etc', '/run', '/bin', '/sbin', '/lib', '/lib64', '/var'];

const execReplySchema = z.object({
  exitCode: z.number().int().nullable(),
  signal: z
    .string()
    .nullable()
    .refine((s) => s === null || s in os.constants.signals, 'unknown signal name'),
  timedOut: z.boolean(),
  truncated: z.boolean(),
});

const listReplySchema = z.object({ files: z.array(z.string()), truncated: z.boolean() });

class LocalSandboxImpl implements LocalSandbox {
  readonly driver = 'local';
  readonly workdir: string;
  readonly processLimit: 'cgroup' | 'rlimit' | 'none';
  readonly hostPid: number;
  readonly cgroupDir: string | undefined;
  readonly #child: ChildProcess;
  readonly #conn: AgentConnection;
  readonly #privateDir: string;
  readonly #removeWorkdir: boolean;
  readonly #cgroup: PidsCgroup | undefined;
  readonly #closed: Promise<void>;
  readonly #logger: Logger;
  readonly #maxOutputBytes: number;
  #destroying: Promise<void> | undefined;

  private constructor(init: {
    workdir: string;
    child: ChildProcess;
    conn: AgentConnection;
    privateDir: string;
    removeWorkdir: boolean;
    cgroup: PidsCgroup | undefined;
    closed: Promise<void>;
    logger: Logger;
    maxOutputBytes: number;
    processLimit: 'cgroup' | 'rlimit' | 'none';
  }) {
    this.workdir = init.workdir;
    this.#child = init.child;
    this.hostPid = init.child.pid ?? 0;
    this.#conn = init.conn;
    this.#privateDir = init.privateDir;
    this.#removeWorkdir = init.removeWorkdir;
    this.#cgroup = init.cgroup;
    this.cgroupDir = init.cgroup?.dir;
    this.#closed = init.closed;
    this.#logger = init.logger;
    this.#maxOutputBytes = init.maxOutputBytes;
    this.processLimit = init.processLimit;
  }

  static async start(p: StartParams): Promise<LocalSandboxImpl> {
    let hostWorkdir: string | undefined;
    let workdir: string | undefined;
    if (p.hostWorkdir !== undefined) {
      workdir = path.resolve(p.hostWorkdir);
      try {
        hostWorkdir = await realpath(workdir);
        if (!(await stat(hostWorkdir)).isDirectory()) throw new Error('not a directory');
      } catch (err) {
        throw new AppError('SANDBOX_UNAVAILABLE', `hostWorkdir ${workdir} is not an existing directory`, {
          cause: err,
        });
      }
      if (workdir === '/' || SYSTEM_DIRS.some((d) => workdir === d || workdir?.startsWith(`${d}/`))) {
        throw new AppError(
          'SANDBOX_UNAVAILABLE',
          `hostWorkdir ${workdir} overlaps a system directory of the sandbox`,
        );
      }
    }
    await mkdir(p.workRoot, { recursive: true });
    const privateDir = await mkdtemp(path.join(p.workRoot, sandboxFolderPrefix(p.jobId)));
    const cleanupOnFailure: (() => Promise<void>)[] = [() => removeTree(privateDir, p.logger)];
    try {
      await writeOwner(privateDir);
      if (hostWorkdir === undefined || workdir === undefined) {
        hostWorkdir = path.join(privateDir, 'repo');
        await mkdir(hostWorkdir);
        workdir = hostWorkdir;
      }
      const etcDir = path.join(privateDir, 'etc');
      await mkdir(etcDir);
      for (const [name, text] of Object.entries(sandboxEtcFiles()))
        await writeFile(path.join(etcDir, name), text);

      const cgroup = await createPidsCgroup(
        path.basename(privateDir).replace(/^frognano-/, ''),
        p.limits.maxProcesses,
        p.logger,
      );
      if (cgroup) cleanupOnFailure.push(() => cgroup.remove());
      const isRoot = process.getuid?.() === 0;
      const processLimit = cgroup ? 'cgroup' : isRoot ? 'none' : 'rlimit';
      if (processLimit === 'none') {
        p.logger.warn(
          'maxProcesses is not enforced: the worker runs as root and no writable cgroup pids controller was found, so a fork bomb in the sandbox is stopped only by its timeout',
        );
      }

      const limitsFile = path.join(etcDir, 'limits.sh');
      await writeFile(limitsFile, limitsScript(p.limits));
      const agentConfig = JSON.stringify({ workdir, env: baseEnv(), limitsFile: LIMITS_FILE });
      const bwrapArgs = buildBwrapArgs({
        layout: p.layout,
        hostWorkdir,
        workdir,
        etcDir,
        limitsFile,
        agentScript: AGENT_SCRIPT,
        nodePath: p.nodePath,
        agentConfig,
        tmpSizeMiB: p.limits.diskMiB,
        shareNetwork: p.shareNetwork,
      });
      const [file, args] = cgroup
        ? [
            '/bin/sh',
            ['-c', CGROUP_LAUNCHER, 'frognano-launcher', '1', cgroup.procsFile, p.bwrapPath, ...bwrapArgs],
          ]
        : [p.bwrapPath, bwrapArgs];
      const child = spawn(file, args, {
        stdio: ['pipe', 'pipe', 'pipe'],
        // Nothing of the worker's environment: bwrap's own process (pid 1 in the sandbox) keeps
        // the environment it was started with in /proc/1/environ, readable from inside.
        env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
        cwd: '/',
        detached: true,
      });
      const stderrTail: string[] = [];
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (text: string) => {
        stderrTail.push(text);
        if (stderrTail.join('').length > 8192) stderrTail.splice(0, stderrTail.length - 4);
        p.logger.debug({ stderr: text.slice(0, 2000) }, 'sandbox stderr');
      });
      const conn = new AgentConnection(
        child.stdin as NonNullable<typeof child.stdin>,
        child.stdout as Readable,
        {
          maxBodyBytes: MAX_REPLY_BYTES,
        },
      );
      const closed = new Promise<void>((resolve) => {
        child.once('close', (code, signal) => {
          conn.fail(
            new AppError(
              'SANDBOX_GONE',
              `the sandbox ended (exit code ${code ?? 'none'}, signal ${signal ?? 'none'})`,
              {
                retryable: true,
                details: { stderr: stderrTail.join('').slice(-2000) },
              },
            ),
          );
          resolve();
        });
        child.once('error', (err) => {
          conn.fail(
            new AppError('SANDBOX_GONE', `cannot run bubblewrap: ${err.message}`, {
              cause: err,
              retryable: true,
            }),
          );
          resolve();
        });
      });
      cleanupOnFailure.unshift(async () => {
        killGroup(child);
        await Promise.race([closed, delay(DESTROY_WAIT_MS)]);
      });

      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          conn.ready,
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`the sandbox agent did not start within ${p.startTimeoutMs} ms`)),
              p.startTimeoutMs,
            );
          }),
        ]);
      } catch (err) {
        // Let a dying bwrap finish writing its reason.
        await Promise.race([closed, delay(200)]);
        const reason = stderrTail.join('').trim().slice(-2000);
        throw new AppError(
          'SANDBOX_UNAVAILABLE',
          `cannot start a bubblewrap sandbox: ${reason || (err as Error).message}`,
          { cause: err, retryable: false },
        );
      } finally {
        clearTimeout(timer);
      }
      p.logger.debug({ workdir, hostPid: child.pid, processLimit }, 'sandbox started');
      return new LocalSandboxImpl({
        workdir,
        child,
        conn,
        privateDir,
        removeWorkdir: p.hostWorkdir === undefined,
        cgroup,
        closed,
        logger: p.logger,
        maxOutputBytes: p.limits.maxOutputBytes,
        processLimit,
      });
    } catch (err) {
      for (const cleanup of cleanupOnFailure) await cleanup().catch(() => undefined);
      throw err;
    }
  }

  async exec(command: readonly string[] | string, options: ExecOptions = {}): Promise<ExecResult> {
    const started = performance.now();
    if (typeof command !== 'string' && command.length === 0) {
      throw new AppError('SANDBOX_EXEC_FAILED', 'exec needs a non-empty argv');
    }
    if (options.signal?.aborted) {
      if (this.#conn.failure) throw this.#conn.failure;
      return emptyResult({ signal: 'SIGKILL', durationMs: 0 });
    }
    const header: Record<string, unknown> = {
      op: 'exec',
      ...(typeof command === 'string' ? { script: command } : { argv: [...command] }),
      cwd: options.cwd,
      env: options.env,
      timeoutMs: options.timeoutMs,
      maxOutputBytes: Math.min(options.maxOutputBytes ?? this.#maxOutputBytes, MAX_OUTPUT_BYTES_PER_STREAM),
      stdin: options.stdin !== undefined,
    };
    const blobs = options.stdin !== undefined ? [toBuffer(options.stdin)] : [];
    let execId: number | undefined;
    let abortPending = false;
    const onAbort = (): void => {
      if (execId === undefined) {
        abortPending = true;
        return;
      }
      this.#conn.request({ op: 'kill', target: execId }).catch(() => undefined);
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let reply;
    try {
      reply = await this.#conn.request(header, blobs, (id) => {
        execId = id;
        if (abortPending) onAbort();
      });
    } catch (err) {
      throw mapAgentError(err, this.workdir);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
    const parsed = execReplySchema.safeParse(reply.header);
    if (!parsed.success) {
      throw new AppError(
        'SANDBOX_EXEC_FAILED',
        `invalid exec reply from the sandbox agent: ${parsed.error.message}`,
      );
    }
    return {
      stdout: reply.blobs[0] ?? Buffer.alloc(0),
      stderr: reply.blobs[1] ?? Buffer.alloc(0),
      exitCode: parsed.data.exitCode,
      signal: parsed.data.signal as NodeJS.Signals | null,
      timedOut: parsed.data.timedOut,
      outputTruncated: parsed.data.truncated,
      durationMs: Math.round(performance.now() - started),
    };
  }

  async readFile(filePath: string, options: { maxBytes?: number } = {}): Promise<Buffer> {
    try {
      const reply = await this.#conn.request({ op: 'readFile', path: filePath, maxBytes: options.maxBytes });
      return reply.blobs[0] ?? Buffer.alloc(0);
    } catch (err) {
      throw mapAgentError(err, this.#named(filePath));
    }
  }

  async writeFile(
    filePath: string,
    data: Buffer | string,
    options: { mkdirs?: boolean } = {},
  ): Promise<void> {
    try {
      await this.#conn.request({ op: 'writeFile', path: filePath, mkdirs: options.mkdirs !== false }, [
        toBuffer(data),
      ]);
    } catch (err) {
      throw mapAgentError(err, this.#named(filePath));
    }
  }

  async list(
    dir?: string,
    options: { limit?: number } = {},
  ): Promise<{ files: string[]; truncated: boolean }> {
    let reply;
    try {
      reply = await this.#conn.request({ op: 'list', path: dir ?? '.', limit: options.limit });
    } catch (err) {
      throw mapAgentError(err, this.#named(dir ?? '.'));
    }
    const parsed = listReplySchema.safeParse(reply.header);
    if (!parsed.success)
      throw new AppError(
        'SANDBOX_AGENT_ERROR',
        `invalid list reply from the sandbox agent: ${parsed.error.message}`,
      );
    return parsed.data;
  }

  async copyIn(tar: Readable, options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.#conn.failure) throw this.#conn.failure;
    const timeoutMs = options.timeoutMs ?? DEFAULT_COPY_TIMEOUT_MS;
    const extract = tarStream.extract();
    let failure: unknown;
    const fail = (err: unknown): void => {
      failure ??= err;
      tar.unpipe(extract as unknown as NodeJS.WritableStream);
      extract.destroy(err instanceof Error ? err : new Error(String(err)));
    };
    const onSourceError = (err: Error): void => fail(err);
    tar.once('error', onSourceError);
    const timer = setTimeout(() => fail(new Error(`copy did not finish within ${timeoutMs} ms`)), timeoutMs);
    tar.pipe(extract as unknown as NodeJS.WritableStream);

    const inflight = new Set<Promise<void>>();
    let inflightBytes = 0;
    const dirModes: { path: string; mode: number }[] = [];
    const send = (header: Record<string, unknown>, body: Buffer | undefined): void => {
      const size = body?.length ?? 0;
      inflightBytes += size;
      const p: Promise<void> = this.#conn
        .request(header, body ? [body] : [])
        .then(
          () => undefined,
          (err: unknown) => fail(err),
        )
        .finally(() => {
          inflightBytes -= size;
          inflight.delete(p);
        });
      inflight.add(p);
    };
    try {
      for await (const entry of extract) {
        if (failure) break;
        const h = entry.header;
        const name = tarEntryPath(h.name);
        const type: string = h.type ?? 'file';
        if (name === undefined || type === 'pax-global-header' || type === 'pax-header') {
          entry.resume();
          continue;
        }
        if (type === 'file' || type === 'contiguous-file') {
          const chunks: Buffer[] = [];
          for await (const chunk of entry) chunks.push(chunk as Buffer);
          send({ op: 'put', kind: 'file', path: name, mode: h.mode ?? 0o644 }, Buffer.concat(chunks));
        } else {
          entry.resume();
          if (type === 'directory') {
            send({ op: 'put', kind: 'dir', path: name }, undefined);
            dirModes.push({ path: name, mode: h.mode ?? 0o755 });
          } else if (type === 'symlink') {
            send({ op: 'put', kind: 'symlink', path: name, linkname: h.linkname ?? '' }, undefined);
          } else if (type === 'link') {
            const target = tarEntryPath(h.linkname ?? '');
            if (target === undefined) throw new Error(`hard link ${name} has an invalid target`);
            send({ op: 'put', kind: 'link', path: name, linkname: target }, undefined);
          } else {
            this.#logger.warn({ entry: name, type }, 'copyIn skipped a special file');
          }
        }
        while (inflightBytes > COPY_WINDOW_BYTES && inflight.size > 0 && !failure)
          await Promise.race(inflight);
      }
      await Promise.all(inflight);
      if (failure) throw failure;
      // Directory modes last (deepest first), so a read-only directory did not block its entries.
      dirModes.sort((a, b) => b.path.split('/').length - a.path.split('/').length);
      for (const d of dirModes) send({ op: 'chmod', path: d.path, mode: d.mode }, undefined);
      await Promise.all(inflight);
      if (failure) throw failure;
    } catch (err) {
      fail(err);
      const cause = failure ?? err;
      if (cause instanceof AppError && cause.code === 'SANDBOX_GONE') throw cause;
      const detail =
        cause instanceof AgentRequestError || cause instanceof Error ? cause.message : String(cause);
      throw new AppError('SANDBOX_COPY_FAILED', `copying the archive into the sandbox failed: ${detail}`, {
        cause,
      });
    } finally {
      clearTimeout(timer);
      tar.off('error', onSourceError);
    }
  }

  destroy(): Promise<void> {
    this.#destroying ??= this.#destroy();
    return this.#destroying;
  }

  async #destroy(): Promise<void> {
    try {
      this.#conn.fail(new AppError('SANDBOX_GONE', 'the sandbox was destroyed', { retryable: false }));
      killGroup(this.#child);
      const closed = await Promise.race([
        this.#closed.then(() => true),
        delay(DESTROY_WAIT_MS).then(() => false),
      ]);
      if (!closed)
        this.#logger.warn({ hostPid: this.hostPid }, 'sandbox processes did not end within 5 s of SIGKILL');
      await this.#cgroup?.remove();
      await removeTree(this.#privateDir, this.#logger);
      this.#logger.debug({ removedWorkdir: this.#removeWorkdir }, 'sandbox destroyed');
    } catch (err) {
      this.#logger.warn({ err }, 'sandbox cleanup failed');
    }
  }

  #named(p: string): string {
    return path.isAbsolute(p) ? p : p === '' || p === '.' ? this.workdir : `${this.workdir}/${p}`;
  }
}

/** The relative, checked path of a tar entry; undefined for the archive root (`./`). */
function tarEntryPath(name: string): string | undefined {
  if (name.includes('\0') || name.startsWith('/'))
    throw new Error(`archive entry ${JSON.stringify(name)} has an absolute path`);
  const parts = name.split('/').filter((c) => c !== '' && c !== '.');
  if (parts.includes('..')) throw new Error(`archive entry ${JSON.stringify(name)} leaves the workspace`);
  return parts.length === 0 ? undefined : parts.join('/');
}

function mapAgentError(err: unknown, named: string): unknown {
  if (err instanceof AgentRequestError) {
    if (err.kind === 'file') return new SandboxFileError(err.errno ?? 'EIO', err.path ?? named, err.message);
    if (err.kind === 'exec')
      return new AppError('SANDBOX_EXEC_FAILED', err.message, { details: { errno: err.errno } });
    return new AppError('SANDBOX_AGENT_ERROR', `the sandbox agent failed: ${err.message}`);
  }
  return err;
}

function emptyResult(r: { signal: NodeJS.Signals | null; durationMs: number }): ExecResult {
  return {
    stdout: Buffer.alloc(0),
    stderr: Buffer.alloc(0),
    exitCode: null,
    signal: r.signal,
    timedOut: false,
    outputTruncated: false,
    durationMs: r.durationMs,
  };
}

function toBuffer(data: Buffer | string): Buffer {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** rm -rf that also copes with directories the sandbox made read-only (non-root workers). */
async function removeTree(dir: string, logger: Logger): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch {
    try {
      await makeWritable(dir);
      await rm(dir, { recursive: true, force: true });
    } catch (err) {
      logger.warn({ err, dir }, 'cannot remove the sandbox workspace');
    }
  }
}

async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => undefined);
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (e.isDirectory()) await makeWritable(path.join(dir, e.name));
  }
}
