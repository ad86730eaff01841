import { constants } from 'node:fs';
import { open, readlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { pack as createPack, type Header, type Pack } from 'tar-stream';
import { runGit } from './run-git.js';

/**
 * A tar stream (ustar, with pax headers for long names; made by `tar-stream`) of the files tracked in
 * the index of `dir`, read from its working tree — and nothing else: no `.git` directory (so no
 * remote URL, no config, no hooks), no untracked or ignored files, no submodules.
 *
 * Unlike `git archive`, it ignores `export-ignore`/`export-subst` attributes, so the sandbox gets
 * every tracked file exactly as checked out (tests a package leaves out of its release archive
 * included). After `git apply --index`, index and working tree agree, so the stream is the patched
 * tree. Regular files are opened with `O_NOFOLLOW` and symbolic links are archived as links, so
 * nothing outside `dir` is ever read.
 *
 * Errors (git failing, a file vanishing) destroy the stream with the error; the consumer sees it.
 */
export function archiveTrackedFiles(dir: string, options: { signal?: AbortSignal } = {}): Readable {
  const pack = createPack();
  const fill = async (): Promise<void> => {
    const listed = await runGit(['ls-files', '--stage', '-z'], { cwd: dir, signal: options.signal });
    const dirs = new Set<string>();
    for (const record of listed.stdout.toString('utf8').split('\0')) {
      // "<mode> <object> <stage>\t<path>" (git-ls-files(1), --stage).
      const m = /^(\d{6}) [0-9a-f]+ \d\t(.+)$/s.exec(record);
      if (!m) continue;
      const mode = m[1] ?? '';
      const path = m[2] ?? '';
      if (mode === '160000') continue; // a submodule: not cloned, nothing to copy
      for (const parent of parents(path)) {
        if (dirs.has(parent)) continue;
        dirs.add(parent);
        await addEntry(pack, { name: parent, type: 'directory', mode: 0o755 });
      }
      const full = join(dir, path);
      if (mode === '120000') {
        await addEntry(pack, { name: path, type: 'symlink', linkname: await readlink(full), mode: 0o777 });
        continue;
      }
      const handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        const { size } = await handle.stat();
        const header = { name: path, type: 'file' as const, size, mode: mode === '100755' ? 0o755 : 0o644 };
        let entry!: ReturnType<Pack['entry']>;
        const entryDone = new Promise<void>((done, fail) => {
          entry = pack.entry(header, (err) => (err ? fail(err) : done()));
        });
        // Rejects when the consumer destroyed the stream; awaited below and in every wait.
        entryDone.catch(() => undefined);
        // tar-stream's entries are streamx streams: write with backpressure by hand.
        for await (const chunk of handle.createReadStream({ autoClose: false })) {
          if (!entry.write(chunk)) await Promise.race([once(entry, 'drain'), entryDone]);
        }
        entry.end(undefined);
        await entryDone;
      } finally {
        await handle.close();
      }
    }
    pack.finalize();
  };
  fill().catch((err: unknown) => pack.destroy(err instanceof Error ? err : new Error(String(err))));
  // A plain Node byte stream for consumers (tar-stream's own streams are streamx streams).
  return Readable.from(pack, { objectMode: false });
}

function parents(path: string): string[] {
  const out: string[] = [];
  for (let d = dirname(path); d !== '.' && d !== '/'; d = dirname(d)) out.unshift(d);
  return out;
}

function addEntry(pack: Pack, header: Partial<Header> & Pick<Header, 'name'>): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry(header, (err) => (err ? reject(err) : resolve()));
  });
}
