import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { AppError } from '../app-error.js';

/**
 * Where run records, their chain links, trajectories and test logs are kept durably, whichever
 * worker ran the job: an object store with `/`-separated keys (DESIGN.md "observability/").
 *
 * Two drivers, selected by RECORD_STORE: `volume` ({@link createVolumeRecordStore}, files under a
 * folder, in Kubernetes a PersistentVolumeClaim) and `s3` (`createS3RecordStore` in
 * `s3-record-store.ts`, any S3-compatible bucket). Both behave the same: `put` replaces a whole
 * object atomically (a reader never sees half of one), `get` of a missing key is `null`, `list`
 * returns every key under a prefix in ascending order.
 *
 * Errors: a store that cannot be reached or written throws AppError `RECORD_STORE_UNAVAILABLE`
 * (retryable); a key that is not a safe path throws `RECORD_KEY_INVALID`.
 */
export interface RecordStore {
  /** Where it is, for messages: `volume /data/records` or `s3://bucket/prefix`. */
  readonly location: string;
  put(key: string, body: string | Uint8Array): Promise<void>;
  /** The object's bytes, or `null` when there is none. */
  get(key: string): Promise<Buffer | null>;
  /** Every key starting with `prefix` (a folder prefix ends with `/`), ascending. */
  list(prefix: string): Promise<string[]>;
  /** Delete one object; deleting a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** Release connections (the S3 client). */
  close(): void;
}

/** Segments of a key: letters, digits, `.`, `_`, `-` (job ids, owner and repository names). */
const SEGMENT = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * Check a store key: `a/b/c`, each segment {@link SEGMENT}, none `.` or `..`.
 *
 * @throws AppError `RECORD_KEY_INVALID`.
 */
export function assertRecordKey(key: string, options: { prefix?: boolean } = {}): void {
  const body = options.prefix && key.endsWith('/') ? key.slice(0, -1) : key;
  if (options.prefix && body === '') return;
  const ok = body.split('/').every((s) => SEGMENT.test(s) && s !== '.' && s !== '..');
  if (!ok) throw new AppError('RECORD_KEY_INVALID', `not a record store key: ${JSON.stringify(key)}`);
}

/** Wrap an I/O failure of a store as a retryable `RECORD_STORE_UNAVAILABLE`. */
export function storeUnavailable(location: string, action: string, err: unknown): AppError {
  if (err instanceof AppError) return err;
  const message = err instanceof Error ? err.message || err.name : String(err);
  return new AppError('RECORD_STORE_UNAVAILABLE', `record store ${location}: cannot ${action}: ${message}`, {
    retryable: true,
    cause: err,
  });
}

/**
 * The volume driver: the object `a/b/c` is the file `<dir>/a/b/c`, written to a temporary file and
 * renamed into place. One folder per job (`jobs/<job id>/`), so a person can read it with `ls`.
 *
 * @param options.dir the folder (created on first write).
 */
export function createVolumeRecordStore(options: { dir: string }): RecordStore {
  const root = resolve(options.dir);
  const location = `volume ${root}`;
  const pathOf = (key: string): string => {
    assertRecordKey(key);
    return join(root, ...key.split('/'));
  };
  return {
    location,
    async put(key, body) {
      const path = pathOf(key);
      try {
        await mkdir(dirname(path), { recursive: true });
        const tmp = `${path}.${process.pid}.${Date.now()}.partial`;
        await writeFile(tmp, body);
        await rename(tmp, path);
      } catch (err) {
        throw storeUnavailable(location, `write ${key}`, err);
      }
    },
    async get(key) {
      const path = pathOf(key);
      try {
        return await readFile(path);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') return null;
        throw storeUnavailable(location, `read ${key}`, err);
      }
    },
    async list(prefix) {
      assertRecordKey(prefix, { prefix: true });
      // Walk the deepest folder the prefix names, then filter by the rest of it.
      const slash = prefix.lastIndexOf('/');
      const folder = slash < 0 ? '' : prefix.slice(0, slash);
      const keys: string[] = [];
      const walk = async (rel: string): Promise<void> => {
        let entries;
        try {
          entries = await readdir(rel ? join(root, ...rel.split('/')) : root, { withFileTypes: true });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT' || code === 'ENOTDIR') return;
          throw storeUnavailable(location, `list ${prefix}`, err);
        }
        for (const e of entries) {
          const key = rel ? `${rel}/${e.name}` : e.name;
          if (e.isDirectory()) await walk(key);
          else if (e.isFile() && !e.name.endsWith('.partial') && key.startsWith(prefix)) keys.push(key);
        }
      };
      await walk(folder);
      return keys.sort();
    },
    async delete(key) {
      try {
        await rm(pathOf(key), { force: true });
      } catch (err) {
        throw storeUnavailable(location, `delete ${key}`, err);
      }
    },
    close() {},
  };
}
