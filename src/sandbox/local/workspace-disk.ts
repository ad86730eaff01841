import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../../observability/logger.js';
import { parseMountInfo } from './sandbox-cgroup.js';

const run = promisify(execFile);

/**
 * A size-limited file system for one sandbox's workspace: a sparse image file formatted as ext4
 * and loop-mounted (`nosuid`, `nodev`), so a write beyond the size fails inside the sandbox with
 * ENOSPC instead of filling the host's disk. Its blocks are allocated on the host disk only as
 * they are written. Needs root (mount(2)) and loop devices; mke2fs from e2fsprogs.
 */
export interface WorkspaceDisk {
  /** Host directory of the workspace on the mounted file system (owned by the sandbox's uid). */
  readonly dir: string;
  /** Unmount and delete the image. Never throws. */
  remove(): Promise<void>;
}

/** Options of {@link createWorkspaceDisk}. */
export interface WorkspaceDiskOptions {
  /** Private directory (0700) of the sandbox; the image and mount point are made inside. */
  privateDir: string;
  /** Size of the file system in MiB. */
  sizeMiB: number;
  /** Host uid and gid that own the workspace's root directory. */
  owner: { uid: number; gid: number };
  logger: Logger;
}

const SYSTEM_PATH = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };

/**
 * Make the workspace file system, or return undefined (reason logged at debug) when this host
 * cannot: not root, no loop device, no mke2fs. The workspace is `<privateDir>/disk/repo`: the
 * mount's root also holds mke2fs's `lost+found`, which must not appear in the repository.
 */
export async function createWorkspaceDisk(options: WorkspaceDiskOptions): Promise<WorkspaceDisk | undefined> {
  const { privateDir, logger } = options;
  if (process.getuid?.() !== 0) return undefined;
  const image = path.join(privateDir, 'disk.img');
  const mountPoint = path.join(privateDir, 'disk');
  let mounted = false;
  const remove = async (): Promise<void> => {
    if (mounted) {
      try {
        await run('umount', [mountPoint], { env: SYSTEM_PATH });
      } catch {
        // Still busy (a process not yet reaped): detach now, the kernel frees it when unused.
        await run('umount', ['-l', mountPoint], { env: SYSTEM_PATH }).catch((err: unknown) =>
          logger.warn({ err, mountPoint }, 'cannot unmount the sandbox workspace'),
        );
      }
      mounted = false;
    }
    await rm(image, { force: true }).catch(() => undefined);
  };
  try {
    const handle = await open(image, 'wx', 0o600);
    try {
      await handle.truncate(Math.max(8, Math.floor(options.sizeMiB)) * 1024 * 1024);
    } finally {
      await handle.close();
    }
    // No journal and lazy inode tables: the file system lives as long as one sandbox.
    await run(
      'mke2fs',
      [
        '-q',
        '-F',
        '-t',
        'ext4',
        '-m',
        '0',
        '-O',
        '^has_journal',
        '-E',
        `root_owner=${options.owner.uid}:${options.owner.gid},lazy_itable_init=1`,
        image,
      ],
      { env: SYSTEM_PATH },
    );
    await mkdir(mountPoint, { mode: 0o700 });
    await run('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', image, mountPoint], {
      env: SYSTEM_PATH,
    });
    mounted = true;
    // The file system's root replaces the mount point: 0700 like every folder around a workspace.
    await chmod(mountPoint, 0o700);
    const dir = path.join(mountPoint, 'repo');
    await mkdir(dir, { mode: 0o755 });
    await chown(dir, options.owner.uid, options.owner.gid);
    return { dir, remove };
  } catch (err) {
    logger.debug({ err: String((err as { stderr?: string }).stderr ?? err) }, 'no size-limited workspace');
    await remove();
    return undefined;
  }
}

/**
 * Unmount workspace file systems under `workRoot` whose worker died before destroy() (its pid,
 * in `<privateDir>/owner.pid`, is gone), and delete their private directories. Never throws.
 */
export async function sweepStaleWorkspaceDisks(workRoot: string, logger: Logger): Promise<void> {
  if (process.getuid?.() !== 0) return;
  let mounts;
  try {
    mounts = parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8'));
  } catch {
    return;
  }
  const root = path.resolve(workRoot);
  for (const m of mounts) {
    const privateDir = path.dirname(m.mountPoint);
    if (path.dirname(privateDir) !== root || !path.basename(privateDir).startsWith('frognano-')) continue;
    if (path.basename(m.mountPoint) !== 'disk') continue;
    const owner = Number((await readFile(path.join(privateDir, 'owner.pid'), 'utf8').catch(() => '')).trim());
    if (Number.isInteger(owner) && owner > 0 && pidAlive(owner)) continue;
    try {
      await run('umount', ['-l', m.mountPoint], { env: SYSTEM_PATH });
      await rm(privateDir, { recursive: true, force: true });
      logger.info({ privateDir }, 'removed the workspace of a sandbox whose worker died');
    } catch (err) {
      logger.warn({ err, privateDir }, 'cannot remove a stale sandbox workspace');
    }
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
