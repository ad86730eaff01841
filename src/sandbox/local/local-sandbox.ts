import { spawn, type ChildProcess } from 'node:child_process';
import { constants as fsConstants, existsSync } from 'node:fs';
import {
  access,
  chmod,
  chown,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  realpath,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Duplex, Readable } from 'node:stream';
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
import type { PathPattern } from '../path-pattern.js';
import { AgentConnection, AgentRequestError, type ReplyLimits } from './agent-connection.js';
import {
  buildBwrapArgs,
  LAUNCHER_INSIDE,
  LIMITS_FILE,
  limitsScript,
  probeHostLayout,
  sandboxEtcFiles,
  type HostLayout,
} from './bwrap-args.js';
import { createSandboxCgroup, sweepStaleSandboxCgroups, type SandboxCgroup } from './sandbox-cgroup.js';
import { createWorkspaceDisk, sweepStaleWorkspaceDisks, type WorkspaceDisk } from './workspace-disk.js';
import { quantityMiB } from '../quantity.js';
import { isSandboxFolderOf, jobFolders, sandboxFolderPrefix, writeOwner } from './leftover-folders.js';

/**
 * Limits used when neither the factory's `defaultLimits` nor `create()` set them. What each one
 * really does in this driver (`LocalSandbox.enforced` says which hold on this host; `doctor`
 * lists them):
 *
 * - `cpuSeconds` → `RLIMIT_CPU` (bash `ulimit -t`) on every process a command starts, each
 *   counting its own CPU time (SIGXCPU, then SIGKILL). Enforced for root too.
 * - `memoryMiB` → the memory of the WHOLE sandbox (all processes, page cache, and the tmpfs pages
 *   of `/tmp` and `/dev/shm`, which the kernel charges to the writer's memory cgroup) through a
 *   per-sandbox memory cgroup (v1 `memory.limit_in_bytes` + `memory.memsw.limit_in_bytes`, v2
 *   `memory.max` + `memory.swap.max = 0`): over it the kernel OOM-kills a process of the sandbox.
 *   Also `RLIMIT_AS` (`ulimit -v`) per process, so one oversized allocation fails with ENOMEM
 *   (a MemoryError the model can read) before the OOM killer is needed; runtimes that reserve
 *   large address ranges up front (JVM heaps, wasm) need a higher value.
 * - `maxProcesses` → the cgroup's `pids.max` (counts threads), and `RLIMIT_NPROC` (`ulimit -u`)
 *   per user namespace. The kernel does not apply RLIMIT_NPROC to host uid 0, which is one more
 *   reason why a root worker runs sandboxes as an unprivileged host uid.
 * - `diskMiB` → size of the workspace file system: a sparse ext4 image loop-mounted (`nosuid`,
 *   `nodev`) for this sandbox, so a write beyond it fails inside with ENOSPC (needs root). A
 *   `hostWorkdir` is the caller's directory and is not limited.
 * - `maxOutputBytes` → bytes kept of each of stdout and stderr per command (the rest is read and
 *   dropped, `outputTruncated` set).
 *
 * `/tmp` is a tmpfs of a quarter of `memoryMiB` (at most {@link MAX_TMP_MIB}), `/dev/shm` one of a
 * sixteenth (at most {@link MAX_SHM_MIB}); both count against `memoryMiB`. Wall-clock limits are
 * per command (`ExecOptions.timeoutMs`), no default.
 */
export const DEFAULT_LOCAL_LIMITS: Readonly<Required<Omit<SandboxLimits, 'diskMiB'>>> & { diskMiB: number } =
  {
    cpuSeconds: 900,
    memoryMiB: 4096,
    maxProcesses: 1024,
    maxOutputBytes: 10 * 1024 * 1024,
    // As the pods' default ephemeral-storage (10Gi); the image is sparse, so unused space costs nothing.
    diskMiB: 10240,
  };

/** Largest private `/tmp` of a sandbox, MiB. */
export const MAX_TMP_MIB = 1024;
/** Largest private `/dev/shm` of a sandbox, MiB. */
export const MAX_SHM_MIB = 256;

/**
 * Host uid (and gid) that sandboxes run as when the worker runs as root: `nobody` by default. A
 * dedicated uid that owns no file on the host is better (`SANDBOX_HOST_UID`).
 */
export const DEFAULT_SANDBOX_HOST_UID = 65534;

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
  /**
   * What create() does when a whole-sandbox limit cannot be enforced on this host (no writable
   * memory or pids cgroup, no size-limited workspace, no unprivileged uid for a root worker):
   * `refuse` throws `SANDBOX_UNAVAILABLE` naming each one and its fix (the worker, unless
   * `SANDBOX_ALLOW_UNLIMITED=true`); `warn` (default) goes on and calls `onUnenforced` once per
   * factory (`frognano-bot run`, tests, `doctor`).
   */
  unenforcedLimits?: 'refuse' | 'warn';
  /** Told the text of the warning once per factory in `warn` mode; default: logged at warn. */
  onUnenforced?: (message: string) => void;
  /**
   * Host uid and gid the sandbox's processes run as when this process runs as root (bubblewrap is
   * started through `setpriv`); default {@link DEFAULT_SANDBOX_HOST_UID}. Ignored for a non-root
   * worker, whose sandboxes run as its own uid, and for a `hostWorkdir` (the caller's directory).
   */
  hostUid?: number;
  /**
   * Host path of the built `sandbox-exec` launcher (native/sandbox-exec.c, built by
   * `npm run build`); default `native/build/sandbox-exec` of this package.
   */
  launcherPath?: string;
  /**
   * Grace in ms added to each call's own timeout to make its host-side deadline (default
   * {@link DEFAULT_CALL_GRACE_MS}); also how long an aborted command may take to stop.
   */
  callGraceMs?: number;
  /**
   * TESTING ONLY: hand every command the agent's channel as fd 3 (and skip the launcher), so that
   * tests can write forged frames and prove the worker side holds. Never set it in production.
   */
  exposeChannelForTests?: boolean;
}

/** Which of a local sandbox's limits and protections hold (see {@link DEFAULT_LOCAL_LIMITS}). */
export interface LocalEnforcement {
  /** Memory of the whole sandbox, tmpfs included (memory cgroup). */
  memory: boolean;
  /** Swap cannot stretch the memory limit. */
  swap: boolean;
  /** Number of processes of the whole sandbox (pids cgroup, or RLIMIT_NPROC for a non-root worker). */
  processes: boolean;
  /** Size of the workspace (its own file system). */
  disk: boolean;
  /** The sandbox runs as a host uid other than 0. */
  unprivileged: boolean;
}

/**
 * Grace added to a call's own timeout for its host-side deadline, in ms: the agent answers a
 * timed-out command within about 1 s of its kill (sandbox-agent.cjs KILL_GRACE_MS).
 */
export const DEFAULT_CALL_GRACE_MS = 5_000;
/** Deadline of a call without a timeout of its own (file operations, copy entries), in ms. */
const FILE_CALL_DEADLINE_MS = 60_000;
/** Deadline of a command run without `timeoutMs`, in ms (the job's own time limit is shorter). */
const UNTIMED_EXEC_DEADLINE_MS = 6 * 3_600_000;
/** Reply header caps (bytes): results of commands and file operations are a few hundred bytes. */
const SMALL_HEADER_BYTES = 64 * 1024;
/** Header cap of a listing or a Glob walk (bytes): far above any real tree, still a bound. */
const MAX_LIST_HEADER_BYTES = 256 * 1024 * 1024;
/** Default launcher path: `native/build/sandbox-exec`, three levels above src/ or dist/ modules. */
const DEFAULT_LAUNCHER = fileURLToPath(new URL('../../../native/build/sandbox-exec', import.meta.url));

/** A sandbox of the local driver, with facts about how its limits are enforced. */
export interface LocalSandbox extends Sandbox {
  /** How `maxProcesses` is enforced: a per-sandbox pids cgroup, RLIMIT_NPROC only (non-root), or not at all. */
  readonly processLimit: 'cgroup' | 'rlimit' | 'none';
  /** Pid on the host of the bubblewrap process (for diagnostics and leak tests). */
  readonly hostPid: number;
  /** Host directories of the sandbox's cgroup (one per hierarchy), empty without one (diagnostics). */
  readonly cgroupDirs: readonly string[];
  /** Which limits hold for this sandbox. */
  readonly enforced: LocalEnforcement;
  /** Host uid the sandbox's processes run as. */
  readonly hostUid: number;
  /** Highest memory use of the whole sandbox so far, bytes (from its memory cgroup); undefined without one. */
  peakMemoryBytes(): Promise<number | undefined>;
}

/** The factory of the local driver; its sandboxes are {@link LocalSandbox}es. */
export interface LocalSandboxFactory extends SandboxFactory {
  create(options: CreateSandboxOptions): Promise<LocalSandbox>;
  removeLeftovers(jobId: string): Promise<string[]>;
  sweepLeftovers(activeJobIds: readonly string[]): Promise<string[]>;
}

/** The in-sandbox agent script, shipped next to this module (copied to dist/ by the build). */
const AGENT_SCRIPT = fileURLToPath(new URL('./sandbox-agent.cjs', import.meta.url));
/** Largest file readFile returns without `maxBytes` (the agent's own cap), in bytes. */
const MAX_READ_BYTES = 512 * 1024 * 1024;
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
 * to install the Debian package `bubblewrap`), the host cannot make the namespaces, the agent
 * does not start within `startTimeoutMs`, or (with `unenforcedLimits: 'refuse'`) a whole-sandbox
 * limit cannot be enforced here (the message names each one and its fix).
 */
export function createLocalSandboxFactory(options: LocalSandboxFactoryOptions = {}): LocalSandboxFactory {
  const logger = options.logger ?? createSilentLogger();
  let layout: Promise<HostLayout> | undefined;
  let swept = false;
  let warned = false;
  const unenforced = (enforced: LocalEnforcement): void => {
    const missing = describeUnenforced(enforced);
    if (missing.length === 0) return;
    if (options.unenforcedLimits === 'refuse') {
      throw new AppError(
        'SANDBOX_UNAVAILABLE',
        // One line: it ends up in a status comment and in log lines.
        `refusing to start a sandbox whose limits this host cannot enforce (${missing.join('; ')}). ` +
          'Fix the host (`frognano-bot doctor` lists each limit), or set SANDBOX_ALLOW_UNLIMITED=true to run without these limits.',
        { retryable: false, details: { enforced } },
      );
    }
    if (warned) return;
    warned = true;
    const message = `these sandbox limits are NOT enforced on this host:\n  ${missing.join('\n  ')}`;
    if (options.onUnenforced) options.onUnenforced(message);
    else logger.warn({ enforced }, message);
  };
  return {
    driver: 'local',
    async create(createOptions: CreateSandboxOptions): Promise<LocalSandbox> {
      const bwrapPath = await findBwrap(options.bwrapPath);
      const launcherPath = await findLauncher(options.launcherPath ?? DEFAULT_LAUNCHER);
      layout ??= probeHostLayout();
      if (!swept) {
        swept = true;
        await sweepStaleSandboxCgroups(logger);
        await sweepStaleWorkspaceDisks(options.workRoot ?? os.tmpdir(), logger);
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
        hostUid: options.hostUid ?? DEFAULT_SANDBOX_HOST_UID,
        checkEnforced: unenforced,
        launcherPath,
        callGraceMs: options.callGraceMs ?? DEFAULT_CALL_GRACE_MS,
        exposeChannel: options.exposeChannelForTests === true,
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
 * One line per limit or protection of {@link LocalEnforcement} that does not hold, with what the
 * host needs for it (for the refusal, the warning and `doctor`). Empty when everything holds.
 */
export function describeUnenforced(enforced: LocalEnforcement): string[] {
  const lines: string[] = [];
  if (!enforced.memory)
    lines.push(
      'memory of the whole sandbox: needs a writable memory cgroup (run the worker as root with the cgroup v1 memory hierarchy, or delegate the cgroup v2 memory controller to it)',
    );
  else if (!enforced.swap)
    lines.push(
      'swap kept out of the memory limit: on cgroup v1 boot with swapaccount=1, or turn swap off (swapoff -a)',
    );
  if (!enforced.processes)
    lines.push(
      'number of processes: needs a writable pids cgroup (cgroup v1 pids hierarchy as root, or the cgroup v2 pids controller delegated)',
    );
  if (!enforced.disk)
    lines.push(
      'size of the workspace: needs root, loop devices (/dev/loop-control) and mke2fs (Debian package e2fsprogs)',
    );
  if (!enforced.unprivileged)
    lines.push(
      'an unprivileged host uid for the sandbox: the worker runs as root and setpriv (Debian package util-linux) is missing',
    );
  return lines;
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

/**
 * Throw `SANDBOX_UNAVAILABLE` unless the host uid/gid can traverse every directory above each
 * path: bubblewrap runs as that uid and must reach what it binds. The private directory itself is
 * 0700 and owned by that uid; its parents need only `x` (e.g. 0711), not read.
 */
async function assertReachable(paths: readonly string[], uid: number, gid: number): Promise<void> {
  for (const target of paths) {
    for (let dir = path.dirname(target); ; dir = path.dirname(dir)) {
      const st = await stat(dir);
      const ok =
        st.uid === uid
          ? (st.mode & 0o100) !== 0
          : st.gid === gid
            ? (st.mode & 0o010) !== 0
            : (st.mode & 0o001) !== 0;
      if (!ok) {
        throw new AppError(
          'SANDBOX_UNAVAILABLE',
          `the sandbox runs as host uid ${uid}, which cannot traverse ${dir} to reach ${target}: allow it (chmod o+x ${dir}, 0711 is enough) or use a work directory below one it can traverse`,
          { retryable: false },
        );
      }
      if (dir === '/') break;
    }
  }
}

/** Absolute path of an executable of the system directories, or undefined. */
async function findExecutable(name: string): Promise<string | undefined> {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    const candidate = path.join(dir, name);
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return undefined;
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

/**
 * The launcher must exist and be executable; without it commands could reach the agent, so no
 * sandbox starts. Throws `SANDBOX_UNAVAILABLE` naming the fix.
 */
export async function findLauncher(launcherPath: string): Promise<string> {
  try {
    await access(launcherPath, fsConstants.X_OK);
    if ((await stat(launcherPath)).isFile()) return launcherPath;
  } catch {
    // reported below
  }
  throw new AppError(
    'SANDBOX_UNAVAILABLE',
    `the sandbox launcher ${launcherPath} is not built: install the Debian packages gcc and libseccomp-dev (scripts/setup.sh does), then run npm run build:native`,
    { retryable: false },
  );
}

interface StartParams {
  launcherPath: string;
  callGraceMs: number;
  exposeChannel: boolean;
  bwrapPath: string;
  layout: HostLayout;
  limits: typeof DEFAULT_LOCAL_LIMITS;
  jobId: string;
  hostWorkdir: string | undefined;
  workRoot: string;
  nodePath: string;
  shareNetwork: boolean;
  startTimeoutMs: number;
  hostUid: number;
  /** Throws (refuse mode) or warns when a limit does not hold; called before bwrap starts. */
  checkEnforced: (enforced: LocalEnforcement) => void;
  logger: Logger;
}

/** What {@link isolate} set up for one sandbox. */
/**
 * The agent script and the launcher, as bubblewrap binds them. A sandbox that drops to an
 * unprivileged uid gets copies in its own private directory (about 1 MB, a millisecond): the
 * package's folder may sit below one that uid cannot traverse (a 0700 checkout or CI folder), and
 * the copies are root's, in a folder no process of the sandbox can see.
 */
async function stageRuntime(
  privateDir: string,
  launcherPath: string,
  unprivileged: boolean,
): Promise<{ agentScript: string; launcherPath: string }> {
  if (!unprivileged) return { agentScript: AGENT_SCRIPT, launcherPath };
  const dir = path.join(privateDir, 'runtime');
  await mkdir(dir, { mode: 0o755 });
  const staged = {
    agentScript: path.join(dir, 'sandbox-agent.cjs'),
    launcherPath: path.join(dir, 'sandbox-exec'),
  };
  await copyFile(AGENT_SCRIPT, staged.agentScript);
  await copyFile(launcherPath, staged.launcherPath);
  await chmod(staged.agentScript, 0o644);
  await chmod(staged.launcherPath, 0o755);
  return staged;
}

interface Isolation {
  /** Host uid (and gid) the sandbox runs as. */
  uid: number;
  /** `setpriv` when bwrap is to drop to {@link uid}, else undefined. */
  setpriv: string | undefined;
  cgroup: SandboxCgroup | undefined;
  disk: WorkspaceDisk | undefined;
  /** Host directory of the private workspace (used when the caller gave no hostWorkdir). */
  workspace: string;
  enforced: LocalEnforcement;
  processLimit: 'cgroup' | 'rlimit' | 'none';
}

/**
 * The host-side isolation of one sandbox in its 0700 private directory: the unprivileged uid (a
 * root worker, private workspace), the cgroup, the size-limited workspace file system. Each part
 * made is pushed onto `cleanups` (first to run first). Says what holds; never refuses itself.
 */
async function isolate(
  p: StartParams,
  privateDir: string,
  cleanups: (() => Promise<void>)[],
): Promise<Isolation> {
  await writeFile(path.join(privateDir, 'owner.pid'), `${process.pid}\n`);
  const isRoot = process.getuid?.() === 0;
  const setpriv = isRoot && p.hostWorkdir === undefined ? await findExecutable('setpriv') : undefined;
  const uid = setpriv ? p.hostUid : (process.getuid?.() ?? 0);
  const gid = setpriv ? p.hostUid : (process.getgid?.() ?? 0);
  if (setpriv) {
    await assertReachable([privateDir, p.nodePath], uid, gid);
    await chown(privateDir, uid, gid);
  }
  const cgroup = await createSandboxCgroup(
    path.basename(privateDir).replace(/^frognano-/, ''),
    { memoryBytes: p.limits.memoryMiB * 1024 * 1024, maxProcesses: p.limits.maxProcesses },
    p.logger,
  );
  if (cgroup) cleanups.unshift(() => cgroup.remove());
  let disk: WorkspaceDisk | undefined;
  let workspace = path.join(privateDir, 'repo');
  if (p.hostWorkdir === undefined) {
    disk = await createWorkspaceDisk({
      privateDir,
      sizeMiB: p.limits.diskMiB,
      owner: { uid, gid },
      logger: p.logger,
    });
    if (disk) {
      const made = disk;
      cleanups.unshift(() => made.remove());
      workspace = disk.dir;
    } else {
      await mkdir(workspace);
      if (setpriv) await chown(workspace, uid, gid);
    }
  }
  const processLimit = cgroup?.enforced.processes ? 'cgroup' : uid === 0 ? 'none' : 'rlimit';
  const enforced: LocalEnforcement = {
    memory: cgroup?.enforced.memory === true,
    swap: cgroup?.enforced.swap === true,
    processes: processLimit !== 'none',
    disk: disk !== undefined,
    unprivileged: uid !== 0,
  };
  return { uid, setpriv, cgroup, disk, workspace, enforced, processLimit };
}

/**
 * The command that starts bubblewrap: directly, or through {@link CGROUP_LAUNCHER} when it must
 * first join the sandbox's cgroups and/or drop to an unprivileged uid under `setpriv` (no
 * supplementary groups, no capabilities to inherit or regain; user namespaces still work).
 */
function launcherCommand(
  bwrapPath: string,
  bwrapArgs: string[],
  procsFiles: readonly string[],
  setpriv: string | undefined,
  uid: number,
): [string, string[]] {
  const dropUid = setpriv
    ? [
        setpriv,
        `--reuid=${uid}`,
        `--regid=${uid}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--',
      ]
    : [];
  if (procsFiles.length === 0 && dropUid.length === 0) return [bwrapPath, bwrapArgs];
  return [
    '/bin/sh',
    [
      '-c',
      CGROUP_LAUNCHER,
      'frognano-launcher',
      String(procsFiles.length),
      ...procsFiles,
      ...dropUid,
      bwrapPath,
      ...bwrapArgs,
    ],
  ];
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
const findFilesReplySchema = z.object({ files: z.array(z.string()) });

class LocalSandboxImpl implements LocalSandbox {
  readonly driver = 'local';
  readonly workdir: string;
  readonly processLimit: 'cgroup' | 'rlimit' | 'none';
  readonly hostPid: number;
  readonly cgroupDirs: readonly string[];
  readonly enforced: LocalEnforcement;
  readonly hostUid: number;
  readonly #child: ChildProcess;
  readonly #conn: AgentConnection;
  readonly #privateDir: string;
  readonly #removeWorkdir: boolean;
  readonly #cgroup: SandboxCgroup | undefined;
  readonly #disk: WorkspaceDisk | undefined;
  readonly #closed: Promise<void>;
  readonly #logger: Logger;
  readonly #maxOutputBytes: number;
  readonly #callGraceMs: number;
  #destroying: Promise<void> | undefined;

  private constructor(init: {
    workdir: string;
    child: ChildProcess;
    conn: AgentConnection;
    privateDir: string;
    removeWorkdir: boolean;
    cgroup: SandboxCgroup | undefined;
    disk: WorkspaceDisk | undefined;
    enforced: LocalEnforcement;
    hostUid: number;
    closed: Promise<void>;
    logger: Logger;
    maxOutputBytes: number;
    callGraceMs: number;
    processLimit: 'cgroup' | 'rlimit' | 'none';
  }) {
    this.workdir = init.workdir;
    this.#child = init.child;
    this.hostPid = init.child.pid ?? 0;
    this.#conn = init.conn;
    this.#privateDir = init.privateDir;
    this.#removeWorkdir = init.removeWorkdir;
    this.#cgroup = init.cgroup;
    this.#disk = init.disk;
    this.cgroupDirs = init.cgroup?.dirs ?? [];
    this.enforced = init.enforced;
    this.hostUid = init.hostUid;
    this.#closed = init.closed;
    this.#logger = init.logger;
    this.#maxOutputBytes = init.maxOutputBytes;
    this.#callGraceMs = init.callGraceMs;
    this.processLimit = init.processLimit;
    // A broken protocol destroys the sandbox: nothing it sends afterwards is believed.
    this.#conn.onViolation = (error) => {
      this.#logger.warn({ err: error.message, hostPid: this.hostPid }, 'sandbox protocol violation');
      void this.destroy();
    };
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
    await mkdir(p.workRoot, { recursive: true, mode: 0o700 });
    // mkdtemp makes the directory 0700: nothing of the workspace is reachable for other host users.
    const privateDir = await mkdtemp(path.join(p.workRoot, sandboxFolderPrefix(p.jobId)));
    const cleanupOnFailure: (() => Promise<void>)[] = [() => removeTree(privateDir, p.logger)];
    try {
      await writeOwner(privateDir);
      const isolation = await isolate(p, privateDir, cleanupOnFailure);
      const { uid, cgroup, disk, enforced, processLimit, setpriv } = isolation;
      hostWorkdir ??= isolation.workspace;
      workdir ??= isolation.workspace;
      const runtime = await stageRuntime(privateDir, p.launcherPath, setpriv !== undefined);
      const etcDir = path.join(privateDir, 'etc');
      await mkdir(etcDir);
      for (const [name, text] of Object.entries(sandboxEtcFiles()))
        await writeFile(path.join(etcDir, name), text);
      p.checkEnforced(enforced);

      const limitsFile = path.join(etcDir, 'limits.sh');
      await writeFile(limitsFile, limitsScript(p.limits));
      const agentConfig = JSON.stringify({
        workdir,
        env: baseEnv(),
        limitsFile: LIMITS_FILE,
        launcher: LAUNCHER_INSIDE,
        ...(p.exposeChannel ? { exposeChannel: true } : {}),
      });
      const bwrapArgs = buildBwrapArgs({
        layout: p.layout,
        hostWorkdir,
        workdir,
        etcDir,
        limitsFile,
        agentScript: runtime.agentScript,
        nodePath: p.nodePath,
        launcherPath: runtime.launcherPath,
        agentConfig,
        tmpSizeMiB: Math.max(16, Math.min(MAX_TMP_MIB, Math.floor(p.limits.memoryMiB / 4))),
        shmSizeMiB: Math.max(8, Math.min(MAX_SHM_MIB, Math.floor(p.limits.memoryMiB / 16))),
        shareNetwork: p.shareNetwork,
      });
      const [file, args] = launcherCommand(p.bwrapPath, bwrapArgs, cgroup?.procsFiles ?? [], setpriv, uid);
      const child = spawn(file, args, {
        // The agent's channel is fd 3, not stdio (see sandbox-agent.cjs); stderr carries bwrap's
        // own messages (why a start failed).
        stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
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
      const conn = new AgentConnection(child.stdio[3] as Duplex);
      // Until the sandbox object exists, a violation (a forged ready) just kills the sandbox.
      conn.onViolation = () => killGroup(child);
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
      p.logger.debug({ workdir, hostPid: child.pid, enforced, hostUid: uid }, 'sandbox started');
      return new LocalSandboxImpl({
        workdir,
        child,
        conn,
        privateDir,
        removeWorkdir: p.hostWorkdir === undefined,
        cgroup,
        disk,
        enforced,
        hostUid: uid,
        closed,
        logger: p.logger,
        maxOutputBytes: p.limits.maxOutputBytes,
        callGraceMs: p.callGraceMs,
        processLimit,
      });
    } catch (err) {
      for (const cleanup of cleanupOnFailure) await cleanup().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Exec has a host-side deadline of `timeoutMs` plus the call grace (without `timeoutMs`, six
   * hours): past it, or on a reply larger than both output caps together, the sandbox is destroyed
   * and the call rejects with `SANDBOX_PROTOCOL_VIOLATION`. An aborted command that has not ended
   * within the grace ends the same way, so cancelling never waits on the sandbox.
   */
  async exec(command: readonly string[] | string, options: ExecOptions = {}): Promise<ExecResult> {
    const started = performance.now();
    if (typeof command !== 'string' && command.length === 0) {
      throw new AppError('SANDBOX_EXEC_FAILED', 'exec needs a non-empty argv');
    }
    if (options.signal?.aborted) {
      if (this.#conn.failure) throw this.#conn.failure;
      return emptyResult({ signal: 'SIGKILL', durationMs: 0 });
    }
    const maxOutputBytes = Math.min(
      options.maxOutputBytes ?? this.#maxOutputBytes,
      MAX_OUTPUT_BYTES_PER_STREAM,
    );
    const header = {
      op: 'exec',
      ...(typeof command === 'string' ? { script: command } : { argv: [...command] }),
      cwd: options.cwd,
      env: options.env,
      timeoutMs: options.timeoutMs,
      maxOutputBytes,
      stdin: options.stdin !== undefined,
    };
    const limits: ReplyLimits = {
      maxHeaderBytes: SMALL_HEADER_BYTES,
      maxBodyBytes: 2 * maxOutputBytes,
      deadlineMs:
        options.timeoutMs === undefined
          ? UNTIMED_EXEC_DEADLINE_MS
          : Math.max(0, options.timeoutMs) + this.#callGraceMs,
    };
    const blobs = options.stdin !== undefined ? [toBuffer(options.stdin)] : [];
    let execId: number | undefined;
    let abortPending = false;
    let abortTimer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      abortTimer ??= setTimeout(
        () => this.#conn.violate(`an aborted command did not stop within ${this.#callGraceMs} ms`),
        this.#callGraceMs,
      );
      if (execId === undefined) {
        abortPending = true;
        return;
      }
      this.#request({ op: 'kill', target: execId }).catch(() => undefined);
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let reply;
    try {
      reply = await this.#conn.request(header, blobs, limits, (id) => {
        execId = id;
        if (abortPending) onAbort();
      });
    } catch (err) {
      throw mapAgentError(err, this.workdir);
    } finally {
      clearTimeout(abortTimer);
      options.signal?.removeEventListener('abort', onAbort);
    }
    const parsed = execReplySchema.safeParse(reply.header);
    if (!parsed.success || reply.blobs.length !== 2) {
      this.#conn.violate('an exec reply without exit status and both output streams');
      throw this.#conn.failure;
    }
    const [stdout, stderr] = reply.blobs as [Buffer, Buffer];
    if (stdout.length > maxOutputBytes || stderr.length > maxOutputBytes) {
      this.#conn.violate(`an exec reply with more than the ${maxOutputBytes} bytes per stream asked for`);
      throw this.#conn.failure;
    }
    return {
      stdout,
      stderr,
      exitCode: parsed.data.exitCode,
      signal: parsed.data.signal as NodeJS.Signals | null,
      timedOut: parsed.data.timedOut,
      outputTruncated: parsed.data.truncated,
      durationMs: Math.round(performance.now() - started),
    };
  }

  /** A request whose reply is small (no body above `maxBodyBytes`), with the file-call deadline. */
  #request(
    header: Record<string, unknown> & { op: string },
    blobs: readonly Buffer[] = [],
    maxBodyBytes = 0,
    maxHeaderBytes = SMALL_HEADER_BYTES,
  ) {
    return this.#conn.request(header, blobs, {
      maxHeaderBytes,
      maxBodyBytes,
      deadlineMs: FILE_CALL_DEADLINE_MS + this.#callGraceMs,
    });
  }

  async readFile(filePath: string, options: { maxBytes?: number } = {}): Promise<Buffer> {
    try {
      const maxBytes = Math.min(options.maxBytes ?? MAX_READ_BYTES, MAX_READ_BYTES);
      const reply = await this.#request({ op: 'readFile', path: filePath, maxBytes }, [], maxBytes);
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
      await this.#request({ op: 'writeFile', path: filePath, mkdirs: options.mkdirs !== false }, [
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
      // A path is at most PATH_MAX (4096) bytes, up to 6 times that JSON-escaped; 1 KiB per entry on
      // average is far above any real tree and still bounds the header.
      const limit = options.limit ?? 100_000;
      reply = await this.#request(
        { op: 'list', path: dir ?? '.', limit: options.limit },
        [],
        0,
        Math.min(1024 * 1024 + limit * 1024, MAX_LIST_HEADER_BYTES),
      );
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

  async findFiles(dir: string, pattern: PathPattern): Promise<string[]> {
    let reply;
    try {
      // Matches are uncapped (Glob must return what the reference returns): the header cap is the
      // bound a listing has at its largest.
      reply = await this.#request({ op: 'findFiles', path: dir, pattern }, [], 0, MAX_LIST_HEADER_BYTES);
    } catch (err) {
      throw mapAgentError(err, this.#named(dir));
    }
    const parsed = findFilesReplySchema.safeParse(reply.header);
    if (!parsed.success)
      throw new AppError(
        'SANDBOX_AGENT_ERROR',
        `invalid findFiles reply from the sandbox agent: ${parsed.error.message}`,
      );
    return parsed.data.files;
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
      const p: Promise<void> = this.#request(
        header as Record<string, unknown> & { op: string },
        body ? [body] : [],
      )
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
      await this.#disk?.remove();
      await removeTree(this.#privateDir, this.#logger);
      this.#logger.debug({ removedWorkdir: this.#removeWorkdir }, 'sandbox destroyed');
    } catch (err) {
      this.#logger.warn({ err }, 'sandbox cleanup failed');
    }
  }

  async peakMemoryBytes(): Promise<number | undefined> {
    return this.#cgroup?.peakMemoryBytes();
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
