import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Folders a job leaves behind when its worker is killed (SIGKILL, OOM, node loss): its sandbox
 * workspaces (`<workRoot>/frognano-<job>-XXXXXX`) and its clone (`WORK_DIR/<job>-XXXXXX`). They are
 * named after the job id, so a job's re-run (same BullMQ job id) and a starting worker can find and
 * remove them.
 */

/** File in a job folder naming the process that made it (its pid, decimal). */
export const OWNER_FILE = 'owner.pid';

/** Mark `dir` as made by this process: the sweeps leave it alone while this process lives. */
export async function writeOwner(dir: string): Promise<void> {
  await writeFile(path.join(dir, OWNER_FILE), `${process.pid}\n`);
}

/**
 * Whether the process that made `dir` may still use it: its pid is alive on this host, or the
 * folder has no readable owner file (made by something else, or being created). Folders of other
 * workers and test runs sharing the temp directory are never taken for leftovers.
 */
export async function ownerAlive(dir: string): Promise<boolean> {
  let pid: number;
  try {
    pid = Number.parseInt(await readFile(path.join(dir, OWNER_FILE), 'utf8'), 10);
  } catch {
    return true;
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** `mkdtemp` appends six characters. */
const MKDTEMP_SUFFIX = /-[A-Za-z0-9]{6}$/;

/** Name prefix of a local sandbox's private folder for `jobId` (before mkdtemp's suffix). */
export function sandboxFolderPrefix(jobId: string): string {
  return `frognano-${jobId.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 64) || 'job'}-`;
}

/** Name prefix of a job's clone folder in WORK_DIR (before mkdtemp's suffix). */
export function cloneFolderPrefix(jobId: string): string {
  return `${jobId.slice(0, 80)}-`;
}

/**
 * Whether `name` (a folder in the sandbox root) is a sandbox folder of `jobId` or of one of its
 * derived sandboxes (`<job>-a2`, `<job>-tests-base`…).
 */
export function isSandboxFolderOf(name: string, jobId: string): boolean {
  if (!MKDTEMP_SUFFIX.test(name)) return false;
  const base = sandboxFolderPrefix(jobId);
  const long = base.length - 'frognano--'.length >= 64;
  // A 64-character id is cut: the derived sandboxes' suffixes are cut off with it.
  return long ? name.length === base.length + 6 && name.startsWith(base) : name.startsWith(base);
}

/** Whether `name` (a folder in WORK_DIR) is a clone folder of `jobId`. */
export function isCloneFolderOf(name: string, jobId: string): boolean {
  const base = cloneFolderPrefix(jobId);
  return name.length === base.length + 6 && name.startsWith(base) && MKDTEMP_SUFFIX.test(name);
}

/**
 * Job id shape of FrogNano's queue (`<owner>.<repo>.<issue>.<delivery>`, queue/queue-keys.ts), as it
 * appears in a sandbox folder name: anything else in the root (other programs' `frognano-*` temp
 * folders) is never touched.
 */
const JOB_SANDBOX_FOLDER =
  /^frognano-[A-Za-z0-9_-][A-Za-z0-9._-]*\.[A-Za-z0-9._-]+\.\d+\.[A-Za-z0-9._-]+-[A-Za-z0-9]{6}$/;
const JOB_CLONE_FOLDER =
  /^[A-Za-z0-9_-][A-Za-z0-9._-]*\.[A-Za-z0-9._-]+\.\d+\.[A-Za-z0-9._-]+-[A-Za-z0-9]{6}$/;

/**
 * Folders in `dir` that belong to a job and whose owner process is gone ({@link ownerAlive}): `kind` `sandbox` (the local driver's root) or `clone`
 * (WORK_DIR). With `jobId`, only that job's; without, every job-shaped one (for the sweep at worker
 * start, which then keeps those of active jobs). A missing `dir` has none.
 */
export async function jobFolders(
  dir: string,
  kind: 'sandbox' | 'clone',
  jobId?: string,
): Promise<Array<{ path: string; name: string }>> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return [];
  }
  const mine =
    jobId === undefined
      ? (n: string) => (kind === 'sandbox' ? JOB_SANDBOX_FOLDER : JOB_CLONE_FOLDER).test(n)
      : (n: string) => (kind === 'sandbox' ? isSandboxFolderOf(n, jobId) : isCloneFolderOf(n, jobId));
  const found = names.filter(mine).map((name) => ({ name, path: path.join(dir, name) }));
  const dead = await Promise.all(found.map(async (f) => !(await ownerAlive(f.path))));
  return found.filter((_, i) => dead[i]);
}
