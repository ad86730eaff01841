import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { Logger } from './logger.js';

/**
 * Entries waiting for the record store, on the local disk of the process that made them: a record
 * (or an approval) is never lost when the store is down, and a job never waits for the store.
 * Each item is a folder `<dir>/<id>/` with `item.json` and copies of the files to upload, so the
 * trajectory store's own sweep cannot take them away. {@link RecordSpool.drain} retries them.
 */

export const spoolItemSchema = z.object({
  v: z.literal(1),
  id: z.string(),
  repository: z.string(),
  kind: z.enum(['record', 'approval']),
  jobId: z.string().nullable(),
  body: z.record(z.string(), z.unknown()),
  /** When the entry happened (its chain time). */
  at: z.string(),
  /** Files to upload first: name in the item's folder → store key. */
  files: z.array(z.object({ name: z.string(), key: z.string() })),
  tries: z.number().int(),
  lastError: z.string().nullable(),
});
export type SpoolItem = z.infer<typeof spoolItemSchema>;

/** Something that stores one spooled item (upload its files, append its entry); throws when it cannot. */
export type SpoolWriter = (item: SpoolItem, readFileOf: (name: string) => Promise<Buffer>) => Promise<void>;

export interface RecordSpool {
  readonly dir: string;
  /**
   * Keep an item: `files` are copied from their local paths (or written from memory) now.
   * @returns the item id.
   */
  add(
    item: Omit<SpoolItem, 'v' | 'id' | 'files' | 'tries' | 'lastError'>,
    files: Array<{ key: string; path?: string; data?: string | Uint8Array }>,
    error: string,
  ): Promise<string>;
  /** Items waiting, oldest first. */
  pending(): Promise<SpoolItem[]>;
  /** Try every waiting item once with `write`; stored ones are removed. Returns how many were stored and how many still wait. */
  drain(write: SpoolWriter): Promise<{ stored: number; waiting: number }>;
}

/** Create the spool in `dir` (created when missing). */
export function createRecordSpool(options: { dir: string; logger?: Logger }): RecordSpool {
  const dir = resolve(options.dir);
  const itemDir = (id: string): string => join(dir, id);
  const save = async (item: SpoolItem): Promise<void> => {
    const path = join(itemDir(item.id), 'item.json');
    await writeFile(`${path}.tmp`, JSON.stringify(item, null, 2));
    await rename(`${path}.tmp`, path);
  };
  const pending = async (): Promise<SpoolItem[]> => {
    const names = await readdir(dir).catch(() => [] as string[]);
    const items: SpoolItem[] = [];
    for (const name of names.sort()) {
      try {
        const parsed = spoolItemSchema.safeParse(
          JSON.parse(await readFile(join(dir, name, 'item.json'), 'utf8')),
        );
        if (parsed.success) items.push(parsed.data);
        else options.logger?.warn({ item: name }, 'a pending run record is not readable; left in place');
      } catch {
        // Being written, or half-written by a process that died before item.json: skipped.
      }
    }
    return items;
  };
  return {
    dir,
    async add(item, files, error) {
      // Time-ordered ids, so items drain in the order they were made.
      const id = `${new Date().toISOString().replace(/[:.]/g, '')}-${randomUUID().slice(0, 8)}`;
      await mkdir(itemDir(id), { recursive: true });
      const stored: SpoolItem['files'] = [];
      for (const [i, f] of files.entries()) {
        const name = `file-${i}`;
        if (f.path) await copyFile(f.path, join(itemDir(id), name));
        else await writeFile(join(itemDir(id), name), f.data ?? '');
        stored.push({ name, key: f.key });
      }
      await save({ v: 1, id, ...item, files: stored, tries: 1, lastError: error });
      return id;
    },
    pending,
    async drain(write) {
      let stored = 0;
      let waiting = 0;
      for (const item of await pending()) {
        try {
          await write(item, (name) => readFile(join(itemDir(item.id), name)));
          await rm(itemDir(item.id), { recursive: true, force: true });
          stored++;
          options.logger?.info({ jobId: item.jobId, kind: item.kind }, 'pending run record stored');
        } catch (err) {
          waiting++;
          await save({
            ...item,
            tries: item.tries + 1,
            lastError: err instanceof Error ? err.message : String(err),
          }).catch(() => undefined);
        }
      }
      return { stored, waiting };
    },
  };
}
