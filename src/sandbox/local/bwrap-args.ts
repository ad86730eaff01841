import { lstat, readlink, readdir } from 'node:fs/promises';
import path from 'node:path';

/** Uid and gid of the sandbox user inside its user namespace (mapped to the worker's own uid). */
export const SANDBOX_UID = 1000;
/** Host name inside the sandbox's UTS namespace. */
export const SANDBOX_HOSTNAME = 'frognano-sandbox';
/** Directory inside the sandbox holding the agent script (read-only). */
export const AGENT_DIR = '/run/frognano';
/** Path inside the sandbox of the per-command launcher (`native/sandbox-exec.c`, read-only). */
export const LAUNCHER_INSIDE = `${AGENT_DIR}/sandbox-exec`;

/**
 * Entries of the host's `/etc` that are bound read-only when present: what the dynamic linker,
 * Debian's alternatives, time zones, name-service switch, MIME and protocol tables and the
 * interpreters need. Everything else of /etc (shadow, ssl/private, application secrets) stays out.
 * `passwd`, `group`, `hosts` and `hostname` are generated instead.
 */
export const ETC_ALLOWLIST: readonly string[] = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'debian_version',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'locale.alias',
  'localtime',
  'mime.types',
  'nsswitch.conf',
  'os-release',
  'perl',
  'protocols',
  'services',
  'ssl/certs',
  'ssl/openssl.cnf',
  'timezone',
];

/** Prefixes of further /etc entries to bind (e.g. `python3.11`, Debian's sitecustomize). */
const ETC_PREFIXES: readonly string[] = ['python3'];

/** What of the host's root file system the sandbox reproduces (see {@link probeHostLayout}). */
export interface HostLayout {
  /** Top-level entries such as `bin -> usr/bin` (merged /usr): recreated as symlinks. */
  rootSymlinks: { name: string; target: string }[];
  /** Top-level directories such as `lib64` on a non-merged /usr: bound read-only. */
  rootDirs: string[];
  /** Entries of /etc (relative paths) that exist on this host and are bound read-only. */
  etcEntries: string[];
  /** Whether `/usr/local` exists (it is then covered by an empty read-only tmpfs). */
  usrLocal: boolean;
}

/** Inspect the host's `/` and `/etc` (cheap; the factory does it once). */
export async function probeHostLayout(): Promise<HostLayout> {
  const rootSymlinks: HostLayout['rootSymlinks'] = [];
  const rootDirs: string[] = [];
  for (const name of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    try {
      const st = await lstat(`/${name}`);
      if (st.isSymbolicLink()) rootSymlinks.push({ name, target: await readlink(`/${name}`) });
      else if (st.isDirectory()) rootDirs.push(name);
    } catch {
      // absent on this host
    }
  }
  const etcEntries: string[] = [];
  for (const entry of ETC_ALLOWLIST) {
    try {
      await lstat(path.join('/etc', entry));
      etcEntries.push(entry);
    } catch {
      // absent on this host
    }
  }
  try {
    for (const name of await readdir('/etc')) {
      if (ETC_PREFIXES.some((p) => name.startsWith(p))) etcEntries.push(name);
    }
  } catch {
    // no /etc?
  }
  const usrLocal = await lstat('/usr/local').then(
    (st) => st.isDirectory(),
    () => false,
  );
  return { rootSymlinks, rootDirs, etcEntries, usrLocal };
}

/** Inputs of {@link buildBwrapArgs}. All paths absolute. */
export interface BwrapArgsInput {
  layout: HostLayout;
  /** Host directory bound read-write as the workspace. */
  hostWorkdir: string;
  /** Path of the workspace inside the sandbox (the same as on the host for this driver). */
  workdir: string;
  /** Host directory holding the generated `passwd`, `group`, `hosts` and `hostname`. */
  etcDir: string;
  /** Host path of the limits script (see {@link limitsScript}), bound at {@link LIMITS_FILE}. */
  limitsFile: string;
  /** Host path of `sandbox-agent.cjs`. */
  agentScript: string;
  /** Host path of the node binary running the agent. */
  nodePath: string;
  /** Host path of the built `sandbox-exec` launcher (bound at {@link LAUNCHER_INSIDE}). */
  launcherPath: string;
  /** JSON configuration handed to the agent (argv). */
  agentConfig: string;
  /** Size of the private /tmp (tmpfs) in MiB; its pages count against the sandbox's memory cgroup. */
  tmpSizeMiB: number;
  /** Size of the private /dev/shm (tmpfs) in MiB; counted like /tmp. */
  shmSizeMiB: number;
  /** Keep the host's network namespace (testing/debugging only: the sandbox is then online). */
  shareNetwork: boolean;
}

/**
 * Where the node binary is inside the sandbox: its own path when under /usr (but not /usr/local,
 * which the sandbox does not see), else under AGENT_DIR.
 */
export function nodePathInside(nodePath: string): string {
  return nodePath.startsWith('/usr/') && !nodePath.startsWith('/usr/local/') ? nodePath : `${AGENT_DIR}/node`;
}

/**
 * The bubblewrap command line (without the `bwrap` executable) that starts the agent:
 *
 * - new user (uid/gid {@link SANDBOX_UID}, no capabilities), network (unless `shareNetwork`), PID,
 *   IPC, UTS and, where supported, cgroup namespaces; `--die-with-parent` and `--new-session`;
 * - a root of its own: `/usr` (and non-merged top-level system directories) read-only with
 *   `/usr/local` covered by an empty read-only tmpfs (what an admin installed by hand, other
 *   tools' credentials and binaries, stays out), the host's top-level symlinks (`/bin -> usr/bin`…)
 *   recreated, a minimal read-only `/etc`, fresh `/proc` and `/dev`, a private size-limited `/tmp`
 *   (tmpfs, also `/var/tmp`) and `/dev/shm`, and the workspace read-write at its own path. Nothing
 *   else of the host (no /home, /root, /work, the host's /tmp, /run, /sys) is visible;
 * - an environment built from scratch (`--clearenv`); commands get theirs from the agent;
 * - the agent as pid 1 (`--as-pid-1`); no nested user namespaces (`--disable-userns`); the agent
 *   keeps CAP_SYS_ADMIN and CAP_SETPCAP inside the sandbox's user namespace only (`--cap-drop ALL
 *   --cap-add …`): the launcher needs them to give each command its own pid namespace and /proc
 *   and to drop the bounding set, and a process holding capabilities its callers lack is closed to their ptrace, /proc/<pid>/fd,
 *   /proc/<pid>/mem and pidfd_getfd (the kernel's ptrace access check), so commands, which the
 *   launcher strips of every capability, cannot reach the agent even where they can see it.
 */
export function buildBwrapArgs(input: BwrapArgsInput): string[] {
  const args: string[] = [
    '--unshare-user',
    '--uid',
    String(SANDBOX_UID),
    '--gid',
    String(SANDBOX_UID),
    '--unshare-pid',
    // The agent is the sandbox's pid 1 (no bwrap reaper): where commands cannot have a pid
    // namespace of their own (bwrap run by host root puts read-only mounts over /proc/bus and
    // /proc/irq, see native/sandbox-exec.c) they would see bwrap's reaper, which holds neither a
    // capability nor a seccomp filter, and could write its memory to run unfiltered system calls.
    // Nothing orphans to the agent: sandbox-exec reaps what its command leaves.
    '--as-pid-1',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(input.shareNetwork ? [] : ['--unshare-net']),
    '--disable-userns',
    '--cap-drop',
    'ALL',
    '--cap-add',
    'CAP_SYS_ADMIN',
    '--cap-add',
    'CAP_SETPCAP',
    '--hostname',
    SANDBOX_HOSTNAME,
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  if (input.layout.usrLocal) args.push('--tmpfs', '/usr/local', '--remount-ro', '/usr/local');
  for (const link of input.layout.rootSymlinks) args.push('--symlink', link.target, `/${link.name}`);
  for (const dir of input.layout.rootDirs) args.push('--ro-bind', `/${dir}`, `/${dir}`);
  args.push('--dir', '/etc');
  for (const entry of input.layout.etcEntries)
    args.push('--ro-bind', path.join('/etc', entry), path.join('/etc', entry));
  for (const file of ['passwd', 'group', 'hosts', 'hostname']) {
    args.push('--ro-bind', path.join(input.etcDir, file), `/etc/${file}`);
  }
  args.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(input.shmSizeMiB * 1024 * 1024),
    '--tmpfs',
    '/dev/shm',
    '--size',
    String(input.tmpSizeMiB * 1024 * 1024),
    '--tmpfs',
    '/tmp',
    '--dir',
    '/var',
    '--symlink',
    '../tmp',
    '/var/tmp',
    '--ro-bind',
    input.agentScript,
    `${AGENT_DIR}/agent.cjs`,
    '--ro-bind',
    input.limitsFile,
    LIMITS_FILE,
    '--ro-bind',
    input.launcherPath,
    LAUNCHER_INSIDE,
  );
  const node = nodePathInside(input.nodePath);
  if (node !== input.nodePath) args.push('--ro-bind', input.nodePath, node);
  args.push('--bind', input.hostWorkdir, input.workdir, '--chdir', input.workdir);
  args.push('--', node, `${AGENT_DIR}/agent.cjs`, input.agentConfig);
  return args;
}

/** Path inside the sandbox of the limits script that every command's bash sources (BASH_ENV). */
export const LIMITS_FILE = `${AGENT_DIR}/limits.sh`;

/**
 * The bash script of rlimits applied to every command (sourced through BASH_ENV, then BASH_ENV is
 * unset so nested shells do not see it). bash's `ulimit` sets soft and hard limits together, and
 * without CAP_SYS_RESOURCE a command cannot raise them again. `-c 0`: no core files.
 */
export function limitsScript(limits: {
  cpuSeconds?: number;
  memoryMiB?: number;
  maxProcesses?: number;
}): string {
  const lines = ['ulimit -c 0 2>/dev/null'];
  if (limits.cpuSeconds !== undefined && Number.isFinite(limits.cpuSeconds)) {
    lines.push(`ulimit -t ${Math.max(1, Math.ceil(limits.cpuSeconds))} 2>/dev/null`);
  }
  if (limits.memoryMiB !== undefined && Number.isFinite(limits.memoryMiB)) {
    lines.push(`ulimit -v ${Math.max(1, Math.floor(limits.memoryMiB)) * 1024} 2>/dev/null`);
  }
  if (limits.maxProcesses !== undefined && Number.isFinite(limits.maxProcesses)) {
    lines.push(`ulimit -u ${Math.max(1, Math.floor(limits.maxProcesses))} 2>/dev/null`);
  }
  lines.push('unset BASH_ENV');
  return `${lines.join('\n')}\n`;
}

/** `/etc/passwd`, `/etc/group`, `/etc/hosts`, `/etc/hostname` of the sandbox (file name → text). */
export function sandboxEtcFiles(): Record<string, string> {
  const u = SANDBOX_UID;
  return {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${u}:${u}:FrogNano sandbox:/tmp:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nsandbox:x:${u}:\nnogroup:x:65534:\n`,
    hosts: `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t${SANDBOX_HOSTNAME}\n`,
    hostname: `${SANDBOX_HOSTNAME}\n`,
  };
}
