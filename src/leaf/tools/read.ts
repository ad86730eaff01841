import { isAscii } from 'node:buffer';
import { decodeUtf8 } from '../observation.js';
import { pyInt } from './python-values.js';
import { codePointLength, codePointOffset, forEachLine, translateNewlines } from './python-text.js';
import { displayPath, toolPathArgument, toPythonFileError } from './tool-path.js';
import { getArg, type ToolContext } from './tool-context.js';

/** The reference's `_optional_int`: `None` and `''` give the default, anything else goes through `int()`. */
function optionalInt(value: unknown, fallback: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  return pyInt(value);
}

/**
 * Read the text of a workspace file (UTF-8, invalid bytes → U+FFFD, universal newlines) for Read and
 * Edit. Throws {@link PythonError} for file errors (`FileNotFoundError: [Errno 2] …: '<path>'`).
 */
export async function readWorkspaceText(ctx: ToolContext, path: string): Promise<string> {
  return translateNewlines(decodeUtf8(await readWorkspaceBytes(ctx, path)));
}

/** The bytes of a workspace file, with file errors as {@link readWorkspaceText} throws them. */
async function readWorkspaceBytes(ctx: ToolContext, path: string): Promise<Buffer> {
  try {
    return await ctx.sandbox.readFile(path, { maxBytes: ctx.settings.readMaxBytes });
  } catch (err) {
    throw toPythonFileError(err, path, ctx.sandbox.workdir);
  }
}

/**
 * The Read tool. Arguments: `file_path` (or `path`), optional `offset` (1-based first line; values
 * below 1 mean 1) and `limit` (number of lines; `<= 0` means all). Lines are split as Python's
 * `str.splitlines()` and numbered `N. `; the observation is `<display path>\n<lines>`, capped at
 * `settings.readOutputChars` characters.
 *
 * Source of the behaviour: `_read` in `frognano/harness/leaf/tool_runner.py` (microsoft/FrogNano).
 * Throws {@link PythonError} for tool-level errors (rendered by `executeTool`).
 */
export async function readTool(args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
  const workdir = ctx.sandbox.workdir;
  const path = toolPathArgument(args, 'file_path', workdir, ctx.settings.homeDir);
  const bytes = await readWorkspaceBytes(ctx, path);
  const offset = Math.max(1, optionalInt(getArg(args, 'offset'), 1));
  const limit = optionalInt(getArg(args, 'limit'), 0);
  const header = displayPath(path, workdir);
  const cap = ctx.settings.readOutputChars;
  const fast = offset === 1 && limit <= 0 ? renderAsciiReadObservation(header, bytes, cap) : undefined;
  return fast ?? renderReadObservation(header, translateNewlines(decodeUtf8(bytes)), offset, limit, cap);
}

/**
 * The Read observation `<header>\n<N. line>\n…` of lines `offset … offset+limit-1` (1-based;
 * `limit <= 0`: to the end) of `text` split as Python's `str.splitlines()`, capped at `cap` code
 * points as {@link truncateObservation} does (`cap <= 0`: no cap).
 *
 * Cost follows what it returns: lines are formatted only until the cap is passed. Past it, with no
 * `limit`, the length of the rest is computed from counts (line breaks, code points, digits of the
 * line numbers) taken with native string scans, so the `[truncated N chars]` count is exact without
 * visiting the remaining lines one by one; with a `limit` the remaining selected lines are counted.
 */
export function renderReadObservation(
  header: string,
  text: string,
  offset: number,
  limit: number,
  cap: number,
): string {
  // Without a tail the text is all there is, so the render always completes.
  return renderLines(header, text, offset, limit, cap, undefined) ?? '';
}

/**
 * {@link renderReadObservation} of `bytes` read whole from line 1, for the common large file: pure
 * ASCII without `\r` (so decoding and newline translation change nothing) and longer than `cap`.
 * Only the prefix up to the line break after byte `cap` is decoded and formatted (the observation
 * passes the cap within it); the rest is counted on the bytes. `undefined` when the file does not
 * qualify (the caller takes the general path).
 */
export function renderAsciiReadObservation(header: string, bytes: Buffer, cap: number): string | undefined {
  if (cap <= 0 || bytes.length <= cap || !isAscii(bytes) || bytes.includes(0x0d)) return undefined;
  let end = cap;
  while (end < bytes.length && !ASCII_BREAKS.has(bytes[end] ?? 0)) end++;
  if (end >= bytes.length - 1) return undefined;
  const prefix = bytes.toString('latin1', 0, end + 1);
  return renderLines(header, prefix, 1, 0, cap, countAsciiRest(bytes.subarray(end + 1)));
}

/**
 * The Read observation of `text`, as if `tail` (counts of more text after it, starting on a new
 * line) followed. `undefined` when there is a tail but the cap was not passed within `text`.
 */
function renderLines(
  header: string,
  text: string,
  offset: number,
  limit: number,
  cap: number,
  tail: RestCounts | undefined,
): string | undefined {
  const parts: string[] = [header, '\n'];
  let total = codePointLength(header) + 1;
  let line = 0;
  let selected = 0;
  let stoppedAt = -1;
  const last = limit <= 0 ? Infinity : offset - 1 + limit;
  forEachLine(text, (start, end, codePoints) => {
    line++;
    if (line < offset) return true;
    if (line > last) return false;
    const number = String(line);
    // Build only while the observation is not yet over the cap; count the rest.
    if (cap <= 0 || total <= cap) {
      parts.push(selected > 0 ? `\n${number}. ` : `${number}. `, text.slice(start, end));
    }
    total += (selected > 0 ? 1 : 0) + number.length + 2 + codePoints;
    selected++;
    if (cap > 0 && total > cap && last === Infinity) {
      stoppedAt = end;
      return false;
    }
    return true;
  });
  if (stoppedAt < 0 && tail !== undefined) return undefined;
  if (stoppedAt >= 0) {
    const rest = countRestText(text.slice(stoppedAt));
    total += restLength(tail === undefined ? rest : addCounts(rest, tail), line);
  }
  const built = parts.join('');
  if (cap <= 0 || total <= cap) return built;
  return `${built.slice(0, codePointOffset(built, cap))}\n[truncated ${total - cap} chars]`;
}

/** Counts of text after a line's end: line breaks, their UTF-16 units, code points in all. */
interface RestCounts {
  breaks: number;
  breakUnits: number;
  codePoints: number;
  /** Whether the text is non-empty and ends with a line break. */
  endsWithBreak: boolean;
}

// eslint-disable-next-line no-control-regex -- \x1c–\x1e are line boundaries for str.splitlines()
const OTHER_BREAK_PATTERN = /[\v\f\r\x1c-\x1e\x85\u2028\u2029]/;
// eslint-disable-next-line no-control-regex -- as above
const ANY_BREAK_PATTERN = /\r\n|[\n\v\f\r\x1c-\x1e\x85\u2028\u2029]/g;
const SURROGATE_PATTERN = /[\ud800-\udfff]/;
/** The `str.splitlines()` boundaries below 0x80 other than `\r`, as bytes. */
const ASCII_BREAKS = new Set([0x0a, 0x0b, 0x0c, 0x1c, 0x1d, 0x1e]);

function countRestText(rest: string): RestCounts {
  let breaks = 0;
  let breakUnits = 0;
  if (OTHER_BREAK_PATTERN.test(rest)) {
    const pattern = new RegExp(ANY_BREAK_PATTERN.source, 'g');
    for (let m = pattern.exec(rest); m !== null; m = pattern.exec(rest)) {
      breaks++;
      breakUnits += m[0].length;
    }
  } else {
    for (let i = rest.indexOf('\n'); i !== -1; i = rest.indexOf('\n', i + 1)) breaks++;
    breakUnits = breaks;
  }
  const codePoints = SURROGATE_PATTERN.test(rest) ? codePointLength(rest) : rest.length;
  const endsWithBreak = rest.endsWith('\n') || OTHER_BREAK_PATTERN.test(rest.slice(-1));
  return { breaks, breakUnits, codePoints, endsWithBreak };
}

/** {@link RestCounts} of ASCII bytes without `\r` (one byte, one code point). */
function countAsciiRest(rest: Buffer): RestCounts {
  let breaks = 0;
  for (const b of ASCII_BREAKS) {
    for (let i = rest.indexOf(b); i !== -1; i = rest.indexOf(b, i + 1)) breaks++;
  }
  const lastByte = rest[rest.length - 1];
  const endsWithBreak = lastByte !== undefined && ASCII_BREAKS.has(lastByte);
  return { breaks, breakUnits: breaks, codePoints: rest.length, endsWithBreak };
}

/** Counts of `a` followed by `b` (`b` non-empty, or its end is `a`'s). */
function addCounts(a: RestCounts, b: RestCounts): RestCounts {
  const bEmpty = b.codePoints === 0;
  return {
    breaks: a.breaks + b.breaks,
    breakUnits: a.breakUnits + b.breakUnits,
    codePoints: a.codePoints + b.codePoints,
    endsWithBreak: bEmpty ? a.endsWithBreak : b.endsWithBreak,
  };
}

/**
 * Characters the lines after line `line` add to a Read observation (`\nN. <line>` each), given
 * the counts of the text from where line `line` ends (at its line break, or the end of the text).
 */
function restLength(rest: RestCounts, line: number): number {
  if (rest.breaks === 0) return 0;
  // A final line break does not start a line; every other break does (empty lines included).
  const lines = rest.endsWithBreak ? rest.breaks - 1 : rest.breaks;
  return lines * 3 + digitsOfRange(line + 1, line + lines) + rest.codePoints - rest.breakUnits;
}
/** Total decimal digits of the integers `first … last` (0 when `last < first`). */
function digitsOfRange(first: number, last: number): number {
  let sum = 0;
  for (let width = 1, low = 1; low <= last; width++, low *= 10) {
    const high = low * 10 - 1;
    const a = Math.max(first, low);
    const b = Math.min(last, high);
    if (b >= a) sum += (b - a + 1) * width;
  }
  return sum;
}
