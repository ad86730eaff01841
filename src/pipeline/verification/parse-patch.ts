/**
 * A parser for the patches the pipeline handles: the output of `git diff --binary --no-renames
 * --full-index` (git-diff(1), "GENERATING PATCH TEXT WITH -P" and "combined diff format" is not
 * used). It reads only what the checks need: which files, their status and modes, whether they are
 * binary, and the added and removed lines with their line numbers.
 *
 * Patch text is untrusted (the model wrote the change): the parser never throws on odd input, it
 * skips what it does not understand, and every count comes from the hunks it could read.
 */

/** How a file is changed by the patch. */
export type PatchFileStatus = 'added' | 'deleted' | 'modified';

/** One line added or removed by a hunk. `line` is 1-based: in the new file for added lines, in the old file for removed ones. */
export interface PatchLine {
  line: number;
  text: string;
}

/** One file of a patch. */
export interface PatchFile {
  /** Path relative to the repository root, `/`-separated (the new path; for a deleted file the old one). */
  path: string;
  status: PatchFileStatus;
  /** Git file mode before (`100644`, `100755`, `120000` symlink, `160000` submodule); `null` when added. */
  oldMode: string | null;
  /** Git file mode after; `null` when deleted. */
  newMode: string | null;
  /** True for a `GIT binary patch` or `Binary files … differ` entry (no line data then). */
  binary: boolean;
  addedLines: PatchLine[];
  removedLines: PatchLine[];
}

/**
 * Parse a `git diff` patch into its files, in patch order.
 *
 * Paths are taken from the `---`/`+++` lines when present, else from the `diff --git` header (which,
 * without rename detection, names the same path twice); C-quoted paths (`"a/t\303\251st"`) are
 * unquoted. Hunks are read by their line counts, so a content line that looks like a header is
 * never mistaken for one. `\ No newline at end of file` markers are skipped.
 *
 * @param patch the patch text (UTF-8 decoded); `''` gives `[]`.
 */
export function parsePatch(patch: string): PatchFile[] {
  const lines = patch.split('\n');
  const files: PatchFile[] = [];
  let i = 0;
  while (i < lines.length) {
    const header = lines[i] ?? '';
    if (!header.startsWith('diff --git ')) {
      i++;
      continue;
    }
    const file: PatchFile = {
      path: headerPath(header.slice('diff --git '.length)) ?? '',
      status: 'modified',
      oldMode: null,
      newMode: null,
      binary: false,
      addedLines: [],
      removedLines: [],
    };
    i = readExtendedHeader(lines, i + 1, file);
    while (i < lines.length && (lines[i] ?? '').startsWith('@@ ')) i = readHunk(lines, i, file);
    files.push(file);
  }
  return files;
}

/**
 * Read a file's extended header lines (modes, `index`, `---`/`+++`, binary markers) from `lines[i]`
 * up to its first hunk or the next file into `file`; returns the index of that line.
 */
function readExtendedHeader(lines: readonly string[], i: number, file: PatchFile): number {
  let sawNewFile = false;
  let sawDeletedFile = false;
  let mode: string | null = null;
  let minus: string | null = null;
  let plus: string | null = null;
  for (; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.startsWith('diff --git ') || line.startsWith('@@ ')) break;
    let m: RegExpExecArray | null;
    if ((m = /^new file mode (\d{6})$/.exec(line))) {
      sawNewFile = true;
      file.newMode = m[1] ?? null;
    } else if ((m = /^deleted file mode (\d{6})$/.exec(line))) {
      sawDeletedFile = true;
      file.oldMode = m[1] ?? null;
    } else if ((m = /^old mode (\d{6})$/.exec(line))) {
      file.oldMode = m[1] ?? null;
    } else if ((m = /^new mode (\d{6})$/.exec(line))) {
      file.newMode = m[1] ?? null;
    } else if ((m = /^index [0-9a-f]+\.\.[0-9a-f]+(?: (\d{6}))?$/.exec(line))) {
      mode = m[1] ?? mode;
    } else if (line.startsWith('--- ')) {
      minus = sidePath(line.slice(4), 'a/');
    } else if (line.startsWith('+++ ')) {
      plus = sidePath(line.slice(4), 'b/');
    } else if (line === 'GIT binary patch' || /^Binary files .* differ$/.test(line)) {
      file.binary = true;
    }
  }
  if (sawNewFile) file.status = 'added';
  else if (sawDeletedFile) file.status = 'deleted';
  if (file.status === 'added') file.oldMode = null;
  if (file.status === 'deleted') file.newMode = null;
  // `index a..b 100644` carries the mode when it did not change.
  if (file.status === 'modified') {
    file.oldMode ??= mode;
    file.newMode ??= mode;
  }
  const named = file.status === 'deleted' ? minus : (plus ?? minus);
  if (named) file.path = named;
  return i;
}

/**
 * Read the hunk whose `@@` header is `lines[i]` into `file`'s added and removed lines, by its line
 * counts; returns the index of the line after it (and after a trailing `\ No newline` marker).
 */
function readHunk(lines: readonly string[], i: number, file: PatchFile): number {
  const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(lines[i] ?? '');
  i++;
  if (!m) return i;
  let oldLine = Number(m[1]);
  let newLine = Number(m[3]);
  let oldLeft = m[2] === undefined ? 1 : Number(m[2]);
  let newLeft = m[4] === undefined ? 1 : Number(m[4]);
  while (i < lines.length && (oldLeft > 0 || newLeft > 0)) {
    const line = lines[i] ?? '';
    const tag = line.charAt(0);
    if (tag === '+') {
      file.addedLines.push({ line: newLine++, text: line.slice(1) });
      newLeft--;
    } else if (tag === '-') {
      file.removedLines.push({ line: oldLine++, text: line.slice(1) });
      oldLeft--;
    } else if (tag === ' ' || line === '') {
      // An empty line is a context line whose leading space was stripped by an editor or mailer.
      oldLine++;
      newLine++;
      oldLeft--;
      newLeft--;
    } else if (tag !== '\\') {
      break; // malformed hunk: stop reading it
    }
    i++;
  }
  // A trailing "\ No newline at end of file" after the counts ran out.
  while (i < lines.length && (lines[i] ?? '').startsWith('\\')) i++;
  return i;
}

/** Lines changed by a file: added plus removed (0 for a binary file). */
export function changedLineCount(file: PatchFile): number {
  return file.addedLines.length + file.removedLines.length;
}

/**
 * The path of a `---`/`+++` line: `/dev/null` gives null; `a/x` (or `b/x`) gives `x`; a C-quoted
 * path is unquoted first. A trailing tab (git adds one after paths with spaces) is dropped.
 */
function sidePath(raw: string, prefix: string): string | null {
  const text = raw.replace(/\t$/, '');
  if (text === '/dev/null') return null;
  const path = text.startsWith('"') ? unquoteC(text)?.value : text;
  if (path === undefined || !path.startsWith(prefix)) return null;
  return path.slice(prefix.length);
}

/**
 * The path named by a `diff --git a/X b/X` header. Without renames both sides are the same path, so
 * an unquoted header is split in the middle (this also handles paths with spaces).
 */
function headerPath(rest: string): string | null {
  if (rest.startsWith('"')) {
    const first = unquoteC(rest);
    if (!first) return null;
    const second = rest.slice(first.length).trimStart();
    const b = second.startsWith('"') ? unquoteC(second)?.value : second;
    const chosen = b ?? first.value;
    return chosen.replace(/^[ab]\//, '');
  }
  // "a/X b/X": length = 2 * len(X) + 5.
  if ((rest.length - 5) % 2 === 0 && rest.startsWith('a/')) {
    const half = (rest.length - 5) / 2;
    const a = rest.slice(2, 2 + half);
    const b = rest.slice(2 + half + 3);
    if (rest.slice(2 + half, 2 + half + 3) === ' b/' && a === b) return a;
  }
  const m = / b\/(.*)$/.exec(rest);
  return m?.[1] ?? null;
}

const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/**
 * Unquote a C-style quoted string as git writes paths (quote.c `quote_c_style`): `\n`, `\t`, `\"`,
 * `\\`… and octal escapes of raw bytes (`\303\251` for "é"), decoded as UTF-8.
 *
 * @returns the value and the number of characters consumed (both quotes included), or null when the
 *   text does not start with a complete quoted string.
 */
export function unquoteC(text: string): { value: string; length: number } | null {
  if (!text.startsWith('"')) return null;
  const bytes: number[] = [];
  for (let i = 1; i < text.length; i++) {
    const ch = text.charAt(i);
    if (ch === '"') return { value: Buffer.from(bytes).toString('utf8'), length: i + 1 };
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const next = text.charAt(i + 1);
    const octal = /^[0-7]{3}/.exec(text.slice(i + 1, i + 4));
    if (octal) {
      bytes.push(parseInt(octal[0], 8));
      i += 3;
    } else if (next in C_ESCAPES) {
      bytes.push(C_ESCAPES[next] as number);
      i += 1;
    } else {
      return null;
    }
  }
  return null;
}
