import { decodeUtf8, truncateObservation } from '../observation.js';
import { pyInt } from './python-values.js';
import { splitLines, translateNewlines } from './python-text.js';
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
  const lines = splitLines(await readWorkspaceText(ctx, path));
  const offset = Math.max(1, optionalInt(getArg(args, 'offset'), 1));
  const limit = optionalInt(getArg(args, 'limit'), 0);
  const end = limit <= 0 ? lines.length : Math.min(lines.length, offset - 1 + limit);
  const numbered: string[] = [];
  for (let i = offset - 1; i < end; i++) numbered.push(`${i + 1}. ${lines[i] ?? ''}`);
  return truncateObservation(
    `${displayPath(path, workdir)}\n${numbered.join('\n')}`,
    ctx.settings.readOutputChars,
  );
}
