import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../observability/logger.js';

/**
 * A per-sandbox cgroup of the `pids` controller, the one limit on the number of processes that
 * holds when the worker runs as root (RLIMIT_NPROC is not enforced for uid 0 of the host, even
 * inside a user namespace mapped to it). A process joins by writing its pid to {@link procsFile};
 * its children stay in. Counts tasks, i.e. threads too.
 */
export interface PidsCgroup {
  /** Cgroup directory on the host. */
  readonly dir: string;
  /** The `cgroup.procs` file to write a pid into. */
  readonly procsFile: string;
  /** Remove the cgroup once its processes are gone (retries for up to ~2 s). Never throws. */
  remove(): Promise<void>;
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

/**
 * Where a new child cgroup with the pids controller can be made for this process, from the
 * contents of `/proc/self/cgroup` and `/proc/self/mountinfo`: the cgroup v1 `pids` hierarchy, or
 * the cgroup v2 directory of this process when `pids` is already enabled in its
 * `cgroup.subtree_control` (checked by the caller). Undefined when there is none.
 */
export function pidsCgroupBase(
  procCgroup: string,
  mountInfo: string,
): { dir: string; version: 1 | 2 } | undefined {
  const cgroups = parseProcCgroup(procCgroup);
  const mounts = parseMountInfo(mountInfo);
  const under = (mount: MountLine, p: string): string | undefined => {
    const rel =
      mount.root === '/'
        ? p
        : p.startsWith(`${mount.root}/`) || p === mount.root
          ? p.slice(mount.root.length)
          : undefined;
    return rel === undefined ? undefined : path.resolve(path.join(mount.mountPoint, rel));
  };
  const v1 = cgroups.find((c) => c.controllers.includes('pids'));
  if (v1) {
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes('pids'));
    const dir = mount ? under(mount, v1.path) : undefined;
    return dir ? { dir, version: 1 } : undefined;
  }
  const v2 = cgroups.find((c) => c.hierarchy === '0' && c.controllers.length === 0);
  const mount = mounts.find((m) => m.fsType === 'cgroup2');
  if (v2 && mount) {
    const dir = under(mount, v2.path);
    return dir ? { dir, version: 2 } : undefined;
  }
  return undefined;
}

/** Age after which an empty `frognano-*` cgroup is taken as left behind by a killed worker (ms). */
const STALE_AFTER_MS = 60_000;

async function findBase(logger: Logger): Promise<{ dir: string; version: 1 | 2 } | undefined> {
  try {
    const base = pidsCgroupBase(
      await readFile('/proc/self/cgroup', 'utf8'),
      await readFile('/proc/self/mountinfo', 'utf8'),
    );
    if (base?.version === 2) {
      const control = await readFile(path.join(base.dir, 'cgroup.subtree_control'), 'utf8');
      if (!control.split(/\s+/).includes('pids')) return undefined;
    }
    return base;
  } catch (err) {
    logger.debug({ err }, 'cannot read the cgroup layout');
    return undefined;
  }
}

/**
 * Remove empty `frognano-*` pids cgroups older than a minute: those of sandboxes whose worker was
 * killed before destroy(). A cgroup still holding processes cannot be removed (EBUSY), and a fresh
 * one (about to be joined) is left alone. Never throws.
 */
export async function sweepStalePidsCgroups(logger: Logger): Promise<void> {
  const base = await findBase(logger);
  if (!base) return;
  let names: string[];
  try {
    names = (await readdir(base.dir)).filter((n) => n.startsWith('frognano-'));
  } catch {
    return;
  }
  for (const name of names) {
    const dir = path.join(base.dir, name);
    try {
      if (Date.now() - (await stat(dir)).mtimeMs < STALE_AFTER_MS) continue;
      await rmdir(dir);
      logger.debug({ dir }, 'removed a stale sandbox pids cgroup');
    } catch {
      // still in use, or not ours to remove
    }
  }
}

/**
 * Create a pids cgroup named `frognano-<name>` limited to `maxProcesses` tasks, or return
 * undefined (logged at debug) when this host offers no writable pids controller: not root, no
 * cgroup v1 `pids` hierarchy, or a cgroup v2 tree where pids is not delegated to this process.
 */
export async function createPidsCgroup(
  name: string,
  maxProcesses: number,
  logger: Logger,
): Promise<PidsCgroup | undefined> {
  const base = await findBase(logger);
  if (!base) return undefined;
  const dir = path.join(base.dir, `frognano-${name}`);
  try {
    await mkdir(dir);
  } catch (err) {
    logger.debug({ err, dir }, 'cannot create a pids cgroup');
    return undefined;
  }
  const remove = async (): Promise<void> => {
    for (let attempt = 0; attempt < 40; attempt++) {
      try {
        await rmdir(dir);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return;
        if (code !== 'EBUSY' || attempt === 39) {
          logger.warn({ err, dir }, 'cannot remove the sandbox pids cgroup');
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  try {
    await writeFile(path.join(dir, 'pids.max'), String(Math.max(1, Math.floor(maxProcesses))));
  } catch (err) {
    logger.debug({ err, dir }, 'cannot set pids.max');
    await remove();
    return undefined;
  }
  return { dir, procsFile: path.join(dir, 'cgroup.procs'), remove };
}
