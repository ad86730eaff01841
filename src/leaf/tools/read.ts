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
  let bytes: Buffer;
  try {
    bytes = await ctx.sandbox.readFile(path, { maxBytes: ctx.settings.readMaxBytes });
  } catch (err) {
    throw toPythonFileError(err, path, ctx.sandbox.workdir);
  }
  return translateNewlines(decodeUtf8(bytes));
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
  const text = await readWorkspaceText(ctx, path);
  const offset = Math.max(1, optionalInt(getArg(args, 'offset'), 1));
  const limit = optionalInt(getArg(args, 'limit'), 0);
  return renderReadObservation(displayPath(path, workdir), text, offset, limit, ctx.settings.readOutputChars);
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
  if (stoppedAt >= 0) total += restLength(text, stoppedAt, line);
  const built = parts.join('');
  if (cap <= 0 || total <= cap) return built;
  return `${built.slice(0, codePointOffset(built, cap))}\n[truncated ${total - cap} chars]`;
}

// eslint-disable-next-line no-control-regex -- \x1c–\x1e are line boundaries for str.splitlines()
const OTHER_BREAK_PATTERN = /[\v\f\r\x1c-\x1e\x85\u2028\u2029]/;
// eslint-disable-next-line no-control-regex -- as above
const ANY_BREAK_PATTERN = /\r\n|[\n\v\f\r\x1c-\x1e\x85\u2028\u2029]/g;
const SURROGATE_PATTERN = /[\ud800-\udfff]/;

/**
 * Characters the lines after line `line` add to a Read observation (`\nN. <line>` each), where
 * `from` is the UTF-16 index where line `line` ends (at its line break, or the end of `text`).
 */
function restLength(text: string, from: number, line: number): number {
  const rest = text.slice(from);
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
  if (breaks === 0) return 0;
  // A final line break does not start a line; every other break does (empty lines included).
  const lines = OTHER_BREAK_PATTERN.test(rest.slice(-1)) || rest.endsWith('\n') ? breaks - 1 : breaks;
  const codePoints = (SURROGATE_PATTERN.test(rest) ? codePointLength(rest) : rest.length) - breakUnits;
  return lines * 3 + digitsOfRange(line + 1, line + lines) + codePoints;
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
