import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../observability/logger.js';

/**
 * A per-sandbox control group holding every process of one local sandbox: the whole-sandbox
 * memory limit (anonymous memory, page cache and tmpfs pages together: the kernel charges a tmpfs
 * page to the memory cgroup of the process that wrote it), swap kept out of it, and the number of
 * tasks (threads too; RLIMIT_NPROC is not enforced for uid 0 of the host, so this is the one
 * process limit that holds for a root worker).
 *
 * Both cgroup versions are supported (cgroups(7)): on v1 each controller lives in its own
 * hierarchy (`/sys/fs/cgroup/memory`, `/sys/fs/cgroup/pids`) and the sandbox gets a directory in
 * each; on v2 one directory below the worker's own cgroup, with `memory` and `pids` enabled in the
 * worker cgroup's `cgroup.subtree_control` (delegation, e.g. systemd `Delegate=yes`). A hybrid
 * host uses v1 for every controller bound there and v2 for the rest.
 *
 * A process joins by writing its pid to each of {@link SandboxCgroup.procsFiles}; its children
 * stay in.
 */
export interface SandboxCgroup {
  /** Host directories of the sandbox's cgroup, one per hierarchy used. */
  readonly dirs: readonly string[];
  /** The `cgroup.procs` files to write a pid into (one per hierarchy). */
  readonly procsFiles: readonly string[];
  /** Which limits this cgroup enforces. */
  readonly enforced: CgroupEnforcement;
  /** Highest memory use of the sandbox so far, bytes; undefined when the kernel does not say. */
  peakMemoryBytes(): Promise<number | undefined>;
  /** Processes the kernel's OOM killer ended in this cgroup; undefined when the kernel does not say. */
  oomKills(): Promise<number | undefined>;
  /** Remove the cgroup once its processes are gone (retries for up to ~2 s). Never throws. */
  remove(): Promise<void>;
}

/** Which whole-sandbox limits hold. */
export interface CgroupEnforcement {
  /** Memory of all processes together, tmpfs included. */
  memory: boolean;
  /** Swap cannot stretch the memory limit (limited to 0, or the host has no swap). */
  swap: boolean;
  /** Number of tasks (processes and threads). */
  processes: boolean;
}

/** Limits of {@link createSandboxCgroup}. */
export interface SandboxCgroupLimits {
  /** Memory of the whole sandbox, bytes. */
  memoryBytes: number;
  /** Tasks (processes and threads) of the whole sandbox. */
  maxProcesses: number;
}

interface CgroupLine {
  hierarchy: string;
  controllers: string[];
  path: string;
}

interface MountLine {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

/** The controllers a sandbox cgroup uses. */
export type SandboxController = 'memory' | 'pids';
const CONTROLLERS: readonly SandboxController[] = ['memory', 'pids'];

/** Where a controller can hold a child cgroup for this process. */
export interface CgroupBase {
  /** Directory of this process's cgroup in that hierarchy (the parent of the sandboxes' cgroups). */
  dir: string;
  version: 1 | 2;
}

/** Parse `/proc/self/cgroup` (`hierarchy-id:controllers:path` per line, see cgroups(7)). */
export function parseProcCgroup(text: string): CgroupLine[] {
  const lines: CgroupLine[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (m)
      lines.push({
        hierarchy: m[1] as string,
        controllers: (m[2] as string).split(',').filter(Boolean),
        path: m[3] as string,
      });
  }
  return lines;
}

/** Parse `/proc/self/mountinfo` (proc(5)): root, mount point, fs type, super options. */
export function parseMountInfo(text: string): MountLine[] {
  const unescape = (s: string): string =>
    s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  const mounts: MountLine[] = [];
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    if (left.length < 5 || right.length < 3) continue;
    mounts.push({
      root: unescape(left[3] as string),
      mountPoint: unescape(left[4] as string),
      fsType: right[0] as string,
      superOptions: (right[2] as string).split(','),
    });
  }
  return mounts;
}

function underMount(mount: MountLine, p: string): string | undefined {
  const rel =
    mount.root === '/'
      ? p
      : p.startsWith(`${mount.root}/`) || p === mount.root
        ? p.slice(mount.root.length)
        : undefined;
  return rel === undefined ? undefined : path.resolve(path.join(mount.mountPoint, rel));
}

/**
 * Where each controller can hold a child cgroup for this process, from the contents of
 * `/proc/self/cgroup` and `/proc/self/mountinfo`: the cgroup v1 hierarchy of that controller when
 * one is mounted, else the cgroup v2 directory of this process (whether the controller is
 * available and enabled there is checked by the caller, from `cgroup.controllers` and
 * `cgroup.subtree_control`). A controller without either is absent.
 */
export function cgroupBases(
  procCgroup: string,
  mountInfo: string,
): Partial<Record<SandboxController, CgroupBase>> {
  const cgroups = parseProcCgroup(procCgroup);
  const mounts = parseMountInfo(mountInfo);
  const bases: Partial<Record<SandboxController, CgroupBase>> = {};
  const v2 = cgroups.find((c) => c.hierarchy === '0' && c.controllers.length === 0);
  const v2Mount = mounts.find((m) => m.fsType === 'cgroup2');
  const v2Dir = v2 && v2Mount ? underMount(v2Mount, v2.path) : undefined;
  for (const controller of CONTROLLERS) {
    const v1 = cgroups.find((c) => c.controllers.includes(controller));
    if (v1) {
      const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
      const dir = mount ? underMount(mount, v1.path) : undefined;
      if (dir) bases[controller] = { dir, version: 1 };
    } else if (v2Dir) {
      bases[controller] = { dir: v2Dir, version: 2 };
    }
  }
  return bases;
}

/** What this host offers for sandbox cgroups, per controller (see {@link probeCgroupSupport}). */
export type CgroupSupport = Record<SandboxController, CgroupBase | { missing: string }>;

const readText = (file: string): Promise<string> => readFile(file, 'utf8');
const words = (text: string): string[] => text.split(/\s+/).filter(Boolean);

/**
 * Make the v2 controllers usable for children of `dir`: enabled in its `cgroup.subtree_control`.
 * Enabling fails with EBUSY while `dir` itself holds processes (the "no internal processes" rule),
 * so when this process is the only one there it first moves into a leaf `frognano-worker`.
 */
async function enableV2(dir: string, wanted: SandboxController[], logger: Logger): Promise<void> {
  const enabled = words(await readText(path.join(dir, 'cgroup.subtree_control')));
  const missing = wanted.filter((c) => !enabled.includes(c));
  if (missing.length === 0) return;
  const control = path.join(dir, 'cgroup.subtree_control');
  const write = (): Promise<void> => writeFile(control, missing.map((c) => `+${c}`).join(' '));
  try {
    await write();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EBUSY') throw err;
    const procs = words(await readText(path.join(dir, 'cgroup.procs')));
    if (procs.some((p) => p !== String(process.pid))) throw err;
    const leaf = path.join(dir, 'frognano-worker');
    await mkdir(leaf).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
    await writeFile(path.join(leaf, 'cgroup.procs'), String(process.pid));
    logger.info({ cgroup: leaf }, 'moved the worker into a leaf cgroup to delegate memory and pids');
    await write();
  }
}

/**
 * Which controllers this process can use for sandbox cgroups, with the reason for each one it
 * cannot (for `doctor` and the warnings). On cgroup v2 this enables the controllers in this
 * process's `cgroup.subtree_control` when they are delegated but not yet enabled. Never throws.
 */
export async function probeCgroupSupport(logger: Logger): Promise<CgroupSupport> {
  const support = {} as CgroupSupport;
  let bases: Partial<Record<SandboxController, CgroupBase>>;
  try {
    bases = cgroupBases(await readText('/proc/self/cgroup'), await readText('/proc/self/mountinfo'));
  } catch (err) {
    for (const c of CONTROLLERS) support[c] = { missing: `cannot read /proc/self/cgroup (${String(err)})` };
    return support;
  }
  for (const controller of CONTROLLERS) {
    const base = bases[controller];
    if (!base) {
      support[controller] = { missing: `no cgroup v1 ${controller} hierarchy and no cgroup v2 mount` };
      continue;
    }
    if (base.version === 1) {
      support[controller] = base;
      continue;
    }
    try {
      const available = words(await readText(path.join(base.dir, 'cgroup.controllers')));
      if (!available.includes(controller)) {
        support[controller] = {
          missing: `the cgroup v2 controller ${controller} is not delegated to ${base.dir}`,
        };
        continue;
      }
      await enableV2(base.dir, [controller], logger);
      support[controller] = base;
    } catch (err) {
      support[controller] = {
        missing: `cannot enable ${controller} in ${base.dir}/cgroup.subtree_control (${(err as Error).message})`,
      };
    }
  }
  return support;
}

/** Age after which an empty `frognano-*` cgroup is taken as left behind by a killed worker (ms). */
const STALE_AFTER_MS = 60_000;

/**
 * Remove empty `frognano-*` sandbox cgroups older than a minute: those of sandboxes whose worker
 * was killed before destroy(). A cgroup still holding processes cannot be removed (EBUSY), and a
 * fresh one (about to be joined) is left alone. Never throws.
 */
export async function sweepStaleSandboxCgroups(logger: Logger): Promise<void> {
  const support = await probeCgroupSupport(logger);
  const dirs = new Set<string>();
  for (const c of CONTROLLERS) {
    const base = support[c];
    if ('dir' in base) dirs.add(base.dir);
  }
  for (const baseDir of dirs) {
    let names: string[];
    try {
      names = (await readdir(baseDir)).filter((n) => n.startsWith('frognano-') && n !== 'frognano-worker');
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = path.join(baseDir, name);
      try {
        if (Date.now() - (await stat(dir)).mtimeMs < STALE_AFTER_MS) continue;
        await rmdir(dir);
        logger.debug({ dir }, 'removed a stale sandbox cgroup');
      } catch {
        // still in use, or not ours to remove
      }
    }
  }
}

async function removeDir(dir: string, logger: Logger): Promise<void> {
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || attempt === 39) {
        logger.warn({ err, dir }, 'cannot remove the sandbox cgroup');
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** True when the host has no swap at all (`/proc/swaps` lists no device), so swap cannot stretch a limit. */
async function hostHasNoSwap(): Promise<boolean> {
  try {
    return (await readText('/proc/swaps')).trim().split('\n').length <= 1;
  } catch {
    return false;
  }
}

/** Set the memory limit in a cgroup directory; returns whether swap is kept out too. */
async function limitMemory(dir: string, version: 1 | 2, bytes: number): Promise<boolean> {
  const b = String(Math.max(4 * 1024 * 1024, Math.floor(bytes)));
  if (version === 2) {
    await writeFile(path.join(dir, 'memory.max'), b);
    return writeFile(path.join(dir, 'memory.swap.max'), '0').then(
      () => true,
      () => hostHasNoSwap(),
    );
  }
  await writeFile(path.join(dir, 'memory.limit_in_bytes'), b);
  // memory.memsw.* exists only when the kernel accounts swap (swapaccount=1): memory + swap ≤ limit.
  const memsw = await writeFile(path.join(dir, 'memory.memsw.limit_in_bytes'), b).then(
    () => true,
    () => false,
  );
  if (memsw) return true;
  await writeFile(path.join(dir, 'memory.swappiness'), '0').catch(() => undefined);
  return hostHasNoSwap();
}

async function readNumber(file: string, key?: string): Promise<number | undefined> {
  try {
    const text = await readText(file);
    if (key === undefined) {
      const n = Number(text.trim());
      return Number.isFinite(n) ? n : undefined;
    }
    const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Create the cgroup(s) named `frognano-<name>` of one sandbox with the limits given, as far as
 * this host allows (see {@link SandboxCgroup.enforced}); undefined (reasons logged at debug) when
 * no controller is usable at all: not root and nothing delegated, no cgroup mount.
 */
export async function createSandboxCgroup(
  name: string,
  limits: SandboxCgroupLimits,
  logger: Logger,
): Promise<SandboxCgroup | undefined> {
  const support = await probeCgroupSupport(logger);
  const made = new Map<string, 1 | 2>();
  const dirOf: Partial<Record<SandboxController, { dir: string; version: 1 | 2 }>> = {};
  const enforced: CgroupEnforcement = { memory: false, swap: false, processes: false };
  const cleanup = async (): Promise<void> => {
    for (const dir of made.keys()) await removeDir(dir, logger);
  };
  for (const controller of CONTROLLERS) {
    const base = support[controller];
    if (!('dir' in base)) {
      logger.debug({ controller, reason: base.missing }, 'no sandbox cgroup for this controller');
      continue;
    }
    const dir = path.join(base.dir, `frognano-${name}`);
    try {
      if (!made.has(dir)) {
        await mkdir(dir);
        made.set(dir, base.version);
      }
      if (controller === 'memory') {
        enforced.swap = await limitMemory(dir, base.version, limits.memoryBytes);
        enforced.memory = true;
      } else {
        await writeFile(path.join(dir, 'pids.max'), String(Math.max(1, Math.floor(limits.maxProcesses))));
        enforced.processes = true;
      }
      dirOf[controller] = { dir, version: base.version };
    } catch (err) {
      logger.debug({ err, dir, controller }, 'cannot set up the sandbox cgroup');
    }
  }
  if (!enforced.memory && !enforced.processes) {
    await cleanup();
    return undefined;
  }
  const dirs = [...made.keys()];
  const memory = dirOf.memory;
  return {
    dirs,
    procsFiles: dirs.map((d) => path.join(d, 'cgroup.procs')),
    enforced,
    async peakMemoryBytes() {
      if (!memory) return undefined;
      return memory.version === 1
        ? readNumber(path.join(memory.dir, 'memory.max_usage_in_bytes'))
        : readNumber(path.join(memory.dir, 'memory.peak'));
    },
    async oomKills() {
      if (!memory) return undefined;
      return memory.version === 1
        ? readNumber(path.join(memory.dir, 'memory.oom_control'), 'oom_kill')
        : readNumber(path.join(memory.dir, 'memory.events'), 'oom_kill');
    },
    remove: cleanup,
  };
}
