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
 * Cost follows what it returns: lines are formatted only until the cap is passed; past it the
 * length of the rest is counted (code points per line, digits per line number) in one pass over
 * the characters, so the `[truncated N chars]` count is exact without building the rest.
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
  const last = limit <= 0 ? Infinity : offset - 1 + limit;
  forEachLine(text, (start, end, codePoints) => {
    line++;
    if (line < offset) return true;
    if (line > last) return false;
    const number = String(line);
    const piece = (selected > 0 ? 1 : 0) + number.length + 2 + codePoints;
    // Build only while the observation is not yet over the cap; count the rest.
    if (cap <= 0 || total <= cap) {
      parts.push(selected > 0 ? `\n${number}. ` : `${number}. `, text.slice(start, end));
    }
    total += piece;
    selected++;
    return true;
  });
  const built = parts.join('');
  if (cap <= 0 || total <= cap) return built;
  return `${built.slice(0, codePointOffset(built, cap))}\n[truncated ${total - cap} chars]`;
}
