/**
 * Python's `glob.glob(pattern, recursive=True)` and `fnmatch` (3.11), emulated over a list of files,
 * because the reference Leaf Glob tool is exactly that call and FrogNano-4B learned its results.
 *
 * Why not picomatch: Python's rules differ from any minimatch-style matcher in ways the model sees —
 * no brace or extglob syntax (`{a,b}`, `+(x)` are literal), backslash is a literal character, `[!…]`
 * negation with Python's range quirks, `**` is recursive only as a whole component (`a**b` is `a*b`),
 * hidden names are skipped per component unless that pattern component starts with `.`, and several
 * `**` components yield the same file more than once. A port of the algorithm is smaller and exact.
 *
 * Known limit: the tree is built from a file listing, so empty directories are unknown; that only
 * changes results for a `..` component after a wildcard component (Python yields the file once per
 * directory the wildcard matched, an empty one included; here empty ones are missed).
 *
 * Source of the rules: CPython 3.11 `Lib/glob.py` and `Lib/fnmatch.py` (behaviour re-implemented, not
 * copied).
 *
 * Changes together with the other `python-*.ts` files and the parity suite
 * (`test/fixtures/leaf-parity/`, `test/integration/leaf/parity.test.ts`): the observations must stay
 * byte-identical to the reference.
 */
import { PythonError } from './python-error.js';

/** A directory of the emulated tree (only directories that contain files are known). */
export interface GlobDir {
  dirs: Map<string, GlobDir>;
  files: Set<string>;
  /** The directory above, or `null` at the root of the tree (what lies above it is unknown). */
  parent: GlobDir | null;
}

/** Build the directory tree of `files` (paths relative to the tree root, `/`-separated). */
export function buildGlobTree(files: readonly string[]): GlobDir {
  const root: GlobDir = { dirs: new Map(), files: new Set(), parent: null };
  for (const file of files) {
    const parts = file.split('/').filter((p) => p !== '');
    const name = parts.pop();
    if (name === undefined) continue;
    let dir = root;
    for (const part of parts) {
      let next = dir.dirs.get(part);
      if (!next) {
        next = { dirs: new Map(), files: new Set(), parent: dir };
        dir.dirs.set(part, next);
      }
      dir = next;
    }
    dir.files.add(name);
  }
  return root;
}

/** `glob.has_magic`: the text holds `*`, `?` or `[`. */
export function hasMagic(text: string): boolean {
  return /[*?[]/.test(text);
}

function escapeCodePoint(cp: number): string {
  return `\\u{${cp.toString(16)}}`;
}

/**
 * Read the body of a Python `re` character class as `fnmatch.translate` writes it (escapes `\x`,
 * ranges `a-b`, leading `^`) into a JavaScript class (`u` flag).
 */
function pythonClassToJs(stuff: number[]): string {
  let i = 0;
  let negate = false;
  if (stuff[0] === 0x5e /* ^ */) {
    negate = true;
    i = 1;
  }
  const items: number[] = [];
  let first = true;
  const ranges: Array<[number, number]> = [];
  const readItem = (): number | undefined => {
    const c = stuff[i];
    if (c === undefined) return undefined;
    if (c === 0x5c /* \ */ && i + 1 < stuff.length) {
      i += 2;
      return stuff[i - 1];
    }
    i++;
    return c;
  };
  while (i < stuff.length) {
    // A ']' right after '[' or '[^' is literal in Python's re.
    const lo = first && stuff[i] === 0x5d ? (i++, 0x5d) : readItem();
    first = false;
    if (lo === undefined) break;
    if (stuff[i] === 0x2d /* - */ && i + 1 < stuff.length) {
      i++;
      const hi = readItem();
      if (hi !== undefined) {
        // fnmatch.translate already dropped ranges whose start is above their end.
        if (lo <= hi) ranges.push([lo, hi]);
        continue;
      }
    }
    items.push(lo);
  }
  const body = [
    ...items.map(escapeCodePoint),
    ...ranges.map(([lo, hi]) => `${escapeCodePoint(lo)}-${escapeCodePoint(hi)}`),
  ].join('');
  if (body === '') return negate ? '[^]' : '[]';
  return `[${negate ? '^' : ''}${body}]`;
}

/** Code points of `s` as numbers. */
function codePoints(s: string): number[] {
  return Array.from(s, (ch) => ch.codePointAt(0) ?? 0);
}

function indexOfCp(pat: number[], cp: number, from: number, to: number): number {
  for (let k = from; k < to; k++) if (pat[k] === cp) return k;
  return -1;
}

/**
 * Python `fnmatch.translate(pattern)` as a JavaScript RegExp matching a whole name (case-sensitive,
 * as `fnmatch.fnmatchcase` on POSIX).
 */
export function fnmatchToRegExp(pattern: string): RegExp {
  const pat = codePoints(pattern);
  const n = pat.length;
  let out = '';
  let lastWasStar = false;
  let i = 0;
  while (i < n) {
    const c = pat[i] as number;
    i++;
    if (c === 0x2a /* * */) {
      if (!lastWasStar) out += '.*';
      lastWasStar = true;
      continue;
    }
    lastWasStar = false;
    if (c === 0x3f /* ? */) {
      out += '.';
    } else if (c === 0x5b /* [ */) {
      let j = i;
      if (j < n && pat[j] === 0x21 /* ! */) j++;
      if (j < n && pat[j] === 0x5d /* ] */) j++;
      while (j < n && pat[j] !== 0x5d) j++;
      if (j >= n) {
        out += escapeCodePoint(0x5b);
        continue;
      }
      let stuff: number[];
      if (indexOfCp(pat, 0x2d, i, j) === -1) {
        stuff = escapeBackslashes(pat.slice(i, j), false);
      } else {
        const chunks: number[][] = [];
        let k = pat[i] === 0x21 ? i + 2 : i + 1;
        for (;;) {
          k = indexOfCp(pat, 0x2d, k, j);
          if (k < 0) break;
          chunks.push(pat.slice(i, k));
          i = k + 1;
          k = k + 3;
        }
        const chunk = pat.slice(i, j);
        if (chunk.length > 0) chunks.push(chunk);
        else chunks[chunks.length - 1]?.push(0x2d);
        // Remove empty ranges (start above end), as Python does.
        for (let m = chunks.length - 1; m > 0; m--) {
          const prev = chunks[m - 1] as number[];
          const cur = chunks[m] as number[];
          if ((prev[prev.length - 1] ?? -1) > (cur[0] ?? -1)) {
            chunks[m - 1] = [...prev.slice(0, -1), ...cur.slice(1)];
            chunks.splice(m, 1);
          }
        }
        stuff = [];
        chunks.forEach((ch, idx) => {
          if (idx > 0) stuff.push(0x2d);
          stuff.push(...escapeBackslashes(ch, true));
        });
      }
      i = j + 1;
      if (stuff.length === 0) {
        out += '(?!)';
      } else if (stuff.length === 1 && stuff[0] === 0x21) {
        out += '.';
      } else {
        if (stuff[0] === 0x21) stuff = [0x5e, ...stuff.slice(1)];
        else if (stuff[0] === 0x5e || stuff[0] === 0x5b) stuff = [0x5c, ...stuff];
        out += pythonClassToJs(stuff);
      }
    } else {
      out += escapeCodePoint(c);
    }
  }
  return new RegExp(`^${out}$`, 'su');
}

/** Escape `\` (and `-` when `hyphens`) the way `fnmatch.translate` does inside a class. */
function escapeBackslashes(cps: number[], hyphens: boolean): number[] {
  const out: number[] = [];
  for (const c of cps) {
    if (c === 0x5c || (hyphens && c === 0x2d)) out.push(0x5c);
    out.push(c);
  }
  return out;
}

/** `glob._ishidden`. */
function isHidden(name: string): boolean {
  return name.startsWith('.');
}

/** `os.path.join(a, b)` for a non-absolute `b`. */
function joinPath(a: string, b: string): string {
  if (a === '' || a.endsWith('/')) return a + b;
  return `${a}/${b}`;
}

/** An intermediate result: the path string as Python builds it and what it names in the tree. */
interface Candidate {
  path: string;
  dir: GlobDir | null;
  isFile: boolean;
}

/** `glob._listdir`: the names in `dir` (directories only when `dirOnly`). */
function listNames(dir: GlobDir, dirOnly: boolean): Array<[string, GlobDir | null]> {
  const out: Array<[string, GlobDir | null]> = [];
  for (const [name, sub] of dir.dirs) out.push([name, sub]);
  if (!dirOnly) for (const name of dir.files) if (!dir.dirs.has(name)) out.push([name, null]);
  return out;
}

/** `glob._rlistdir`: every non-hidden name below `dir`, recursively, as relative paths. */
function recursiveNames(
  dir: GlobDir,
  dirOnly: boolean,
  prefix: string,
  out: Candidate[],
  base: string,
): void {
  for (const [name, sub] of listNames(dir, dirOnly)) {
    if (isHidden(name)) continue;
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    out.push({ path: joinPath(base, rel), dir: sub, isFile: sub === null });
    if (sub) recursiveNames(sub, dirOnly, rel, out, base);
  }
}

/**
 * Run the components of a glob pattern (after the literal directory prefix `base`, whose contents
 * are `tree`) the way `glob._iglob` does, and return the matched paths that are files, with the
 * duplicates Python produces. Returned paths are `base` joined with the matched relative path.
 *
 * @param base the literal directory prefix as Python spells it (e.g. `/ws/src`).
 * @param components the remaining pattern components (non-empty, no `.`); the first has magic.
 */
export function globInTree(tree: GlobDir, base: string, components: readonly string[]): string[] {
  let current: Candidate[] = [{ path: base, dir: tree, isFile: false }];
  components.forEach((component, index) => {
    const dirOnly = index < components.length - 1;
    const next: Candidate[] = [];
    for (const cand of current) {
      const dir = cand.dir;
      if (component === '**') {
        // _glob2: the directory itself ('' joined), then everything below it.
        if (dir === null) continue;
        next.push({ path: joinPath(cand.path, ''), dir, isFile: false });
        recursiveNames(dir, dirOnly, '', next, cand.path);
      } else if (hasMagic(component)) {
        if (dir === null) continue;
        const regex = fnmatchToRegExp(component);
        const hiddenOk = isHidden(component);
        for (const [name, sub] of listNames(dir, dirOnly)) {
          if (!hiddenOk && isHidden(name)) continue;
          if (regex.test(name))
            next.push({ path: joinPath(cand.path, name), dir: sub, isFile: sub === null });
        }
      } else if (component === '..') {
        // lexists('<dir>/..') holds for any directory; above the tree's root nothing is known.
        if (dir !== null) next.push({ path: joinPath(cand.path, component), dir: dir.parent, isFile: false });
      } else if (dir !== null) {
        const sub = dir.dirs.get(component);
        if (sub) next.push({ path: joinPath(cand.path, component), dir: sub, isFile: false });
        else if (dir.files.has(component)) {
          next.push({ path: joinPath(cand.path, component), dir: null, isFile: true });
        }
      }
    }
    current = next;
  });
  return current.filter((c) => c.isFile).map((c) => c.path);
}

/**
 * Lists the files below an absolute directory, recursively, as relative `/`-separated paths; `null`
 * when it does not exist or is not a directory. `components` are the pattern components still to
 * match below `dir`: the listing may leave out any file they cannot match (and only those).
 */
export type ListFiles = (dir: string, components: readonly string[]) => Promise<string[] | null>;

/**
 * `glob.glob(pattern, recursive=True)` for an absolute, pathlib-normalized `pattern`, keeping files
 * only (`Path(match).is_file()`), in no particular order, with Python's duplicates. The directory
 * tree comes from `listFiles` of the pattern's literal prefix (the components before the first one
 * with `*`, `?` or `[`), told the components left, so it may leave out what they cannot match. Throws {@link PythonError}
 * `ValueError: embedded null byte` when that prefix holds NUL (as `os.scandir` does).
 */
export async function pythonGlob(pattern: string, listFiles: ListFiles): Promise<string[]> {
  const components = pattern.split('/').filter((c) => c !== '');
  const firstMagic = components.findIndex(hasMagic);
  if (firstMagic === -1) {
    // No magic: os.path.lexists(pattern), then the tool keeps it only if it is a file.
    if (pattern.includes('\0')) return [];
    const slash = pattern.lastIndexOf('/');
    const name = pattern.slice(slash + 1);
    const files = await listFiles(slash <= 0 ? '/' : pattern.slice(0, slash), [name]);
    return files?.includes(name) ? [pattern] : [];
  }
  const base = `/${components.slice(0, firstMagic).join('/')}`;
  if (base.includes('\0')) throw new PythonError('ValueError', 'embedded null byte');
  const rest = components.slice(firstMagic);
  const files = await listFiles(base, rest);
  if (files === null) return [];
  return globInTree(buildGlobTree(files), base, rest);
}
