import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRecordEnv } from '../../config/env.js';
import { jobFolder } from '../../observability/record-chain.js';
import { createRecordStore } from '../../observability/record-store-config.js';

/**
 * The trajectory folder to read a job from: `localDir` when it holds the job (this worker ran it),
 * else a temporary copy of the job's files from the record store (RECORD_STORE…), so any pod — or
 * a laptop with the store's credentials — prints the trajectory of a job another worker ran. The
 * copy is removed when the process exits. Returns `localDir` when the store has nothing either.
 */
export async function jobFilesDir(jobId: string, localDir: string): Promise<string> {
  const local = await stat(join(localDir, jobId)).catch(() => null);
  if (local?.isDirectory()) return localDir;
  let store;
  try {
    store = createRecordStore(loadRecordEnv());
  } catch {
    return localDir;
  }
  try {
    const prefix = `${jobFolder(jobId)}files/`;
    const keys = await store.list(prefix).catch(() => [] as string[]);
    if (keys.length === 0) return localDir;
    const root = await mkdtemp(join(tmpdir(), 'frognano-record-'));
    process.once('exit', () => rmSync(root, { recursive: true, force: true }));
    await mkdir(join(root, jobId));
    for (const key of keys) {
      const name = key.slice(prefix.length);
      if (name.includes('/')) continue;
      const bytes = await store.get(key);
      if (bytes) await writeFile(join(root, jobId, name), bytes);
    }
    return root;
  } finally {
    store.close();
  }
}
