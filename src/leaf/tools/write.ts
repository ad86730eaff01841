import { posix } from 'node:path';
import { SandboxFileError } from '../../sandbox/sandbox.js';
import { PythonError, pythonOsError } from './python-error.js';
import { pyRepr, pyStr } from './python-values.js';
import { codePointLength } from './python-text.js';
import { displayPath, toolPathArgument, toPythonFileError } from './tool-path.js';
import { getArg, type ToolContext } from './tool-context.js';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Python's `UnicodeEncodeError` for `text.encode('utf-8')` when `text` holds lone surrogates (they can
 * arrive through JSON `\ud800` escapes), or `null` when it encodes. Positions are code point indexes.
 */
export function utf8EncodeError(text: string): PythonError | null {
  if (!LONE_SURROGATE.test(text)) return null;
  let index = 0;
  let first = -1;
  let last = -1;
  let firstChar = '';
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    const lone = ch.length === 1 && c >= 0xd800 && c <= 0xdfff;
    if (first === -1 && lone) {
      first = index;
      last = index;
      firstChar = ch;
    } else if (first !== -1) {
      if (!lone) break;
      last = index;
    }
    index++;
  }
  const where =
    first === last
      ? `character ${pyRepr(firstChar)} in position ${first}`
      : `characters in position ${first}-${last}`;
  return new PythonError('UnicodeEncodeError', `'utf-8' codec can't encode ${where}: surrogates not allowed`);
}

/**
 * Write `content` to the workspace file `path` (creating parent directories), raising the
 * {@link PythonError} that `Path.parent.mkdir(parents=True, exist_ok=True)` + `Path.write_text` would
 * raise: `IsADirectoryError` for the file, `FileExistsError`/`NotADirectoryError` naming the parent
 * directory when a file stands in the way, `PermissionError` outside the workspace.
 */
export async function writeWorkspaceText(ctx: ToolContext, path: string, content: string): Promise<void> {
  const encodeError = utf8EncodeError(content);
  if (encodeError) throw encodeError;
  try {
    await ctx.sandbox.writeFile(path, content, { mkdirs: true });
  } catch (err) {
    if (err instanceof SandboxFileError && (err.errno === 'ENOTDIR' || err.errno === 'EEXIST')) {
      // mkdir(parents=True) failed on the parent: EEXIST when the parent itself is a file,
      // ENOTDIR when a file stands higher up.
      const parent = posix.dirname(path);
      throw pythonOsError((await isRegularFile(ctx, parent)) ? 'EEXIST' : 'ENOTDIR', parent);
    }
    throw toPythonFileError(err, path, ctx.sandbox.workdir);
  }
}

/** True when `path` is an existing non-directory file in the workspace. */
async function isRegularFile(ctx: ToolContext, path: string): Promise<boolean> {
  try {
    await ctx.sandbox.readFile(path, { maxBytes: 1 });
    return true;
  } catch (err) {
    if (err instanceof SandboxFileError) return err.errno === 'EFBIG';
    throw err;
  }
}

/**
 * The Write tool. Arguments: `file_path` (or `path`) and `content` (`str()` of the value; missing →
 * empty). Observation: `Wrote <display path> (<N> bytes).` where N counts code points, as the
 * reference's `len(content)` does.
 *
 * Source of the behaviour: `_write` in `frognano/harness/leaf/tool_runner.py` (microsoft/FrogNano).
 * Deviation: content with lone surrogates is refused with the reference's `UnicodeEncodeError`
 * observation but leaves the file untouched (the reference truncated it).
 */
export async function writeTool(args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
  const path = toolPathArgument(args, 'file_path', ctx.sandbox.workdir, ctx.settings.homeDir);
  const content = Object.hasOwn(args, 'content') ? pyStr(getArg(args, 'content')) : '';
  await writeWorkspaceText(ctx, path, content);
  return `Wrote ${displayPath(path, ctx.sandbox.workdir)} (${codePointLength(content)} bytes).`;
}
