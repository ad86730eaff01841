/**
 * Python `str` semantics the reference Leaf tools rely on: `str.splitlines()`, universal-newline
 * decoding, `len()` in code points and `sorted()` order (code points, not UTF-16 units).
 * Source: the Python 3.11 documentation of `str.splitlines` and `io.TextIOWrapper` (newline=None).
 *
 * Changes together with the other `python-*.ts` files and the parity suite
 * (`test/fixtures/leaf-parity/`, `test/integration/leaf/parity.test.ts`): the observations must stay
 * byte-identical to the reference.
 */

/** Line boundaries of Python's `str.splitlines()` (besides `\r\n`, which counts as one). */
const LINE_BREAKS = new Set([0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029]);

/**
 * Python `text.splitlines()`: splits at `\n`, `\r`, `\r\n`, `\v`, `\f`, `\x1c`, `\x1d`, `\x1e`,
 * `\x85`, `\u2028`, `\u2029`; line ends are dropped, and a final line break does not start a new line
 * (`'a\n'` → `['a']`, `''` → `[]`).
 */
export function splitLines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (LINE_BREAKS.has(c)) {
      lines.push(text.slice(start, i));
      i += c === 0x0d && text.charCodeAt(i + 1) === 0x0a ? 2 : 1;
      start = i;
    } else {
      i++;
    }
  }
  if (start < n) lines.push(text.slice(start));
  return lines;
}

/** The line boundaries of `str.splitlines()` (`\r\n` as one), for a native scan. */
// eslint-disable-next-line no-control-regex -- \x1c–\x1e are line boundaries for str.splitlines()
const LINE_BREAK_PATTERN = /\r\n|[\n\v\f\r\x1c-\x1e\x85\u2028\u2029]/g;
const SURROGATE_PATTERN = /[\ud800-\udfff]/;

/**
 * Visit the lines of `text` as {@link splitLines} splits them, without building them: `visit`
 * gets each line's UTF-16 range `[start, end)` and its length in code points, and returns `false`
 * to stop. The scan for line breaks is the regular-expression engine's; code points are counted
 * per line only when the text holds surrogates at all.
 */
export function forEachLine(
  text: string,
  visit: (start: number, end: number, codePoints: number) => boolean,
): void {
  const surrogates = SURROGATE_PATTERN.test(text);
  const breaks = new RegExp(LINE_BREAK_PATTERN.source, 'g');
  let start = 0;
  for (let m = breaks.exec(text); m !== null; m = breaks.exec(text)) {
    const end = m.index;
    const length = surrogates ? codePointLength(text.slice(start, end)) : end - start;
    if (!visit(start, end, length)) return;
    start = end + m[0].length;
  }
  if (start < text.length) {
    visit(start, text.length, surrogates ? codePointLength(text.slice(start)) : text.length - start);
  }
}

/** Universal-newline decoding (Python text mode, `newline=None`): `\r\n` and lone `\r` become `\n`. */
export function translateNewlines(text: string): string {
  return text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
}

/** Python `len(s)`: the number of code points (a lone surrogate counts as one). */
export function codePointLength(s: string): number {
  let count = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/** UTF-16 index just after the first `count` code points of `s` (`s.length` if it has fewer). */
export function codePointOffset(s: string, count: number): number {
  let i = 0;
  for (let k = 0; k < count && i < s.length; k++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      i += next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
    } else {
      i++;
    }
  }
  return i;
}

/** Maps a UTF-16 unit so that comparing mapped units orders strings by code point. */
function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

/**
 * Comparator giving Python's `sorted()` order of `str` values: lexicographic by code point. (JavaScript's
 * default sort compares UTF-16 units, which puts U+10000 and above before U+E000–U+FFFF.)
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}
