import { SandboxFileError } from '../../sandbox/sandbox.js';
import { decodeUtf8 } from '../observation.js';
import { PythonError } from './python-error.js';
import { pyStr, pyStrip, pyTruthy } from './python-values.js';
import { translateNewlines } from './python-text.js';
import { displayPath, toolPathArgument, toPythonFileError } from './tool-path.js';
import { getArg, type ToolContext } from './tool-context.js';
import { writeWorkspaceText } from './write.js';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The reference's `_truthy`: a boolean as is, else `str(value or '').strip().lower()` in 1/true/yes/on. */
export function truthyFlag(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  const text = pyStrip(pyStr(pyTruthy(value) ? value : '')).toLowerCase();
  return text === '1' || text === 'true' || text === 'yes' || text === 'on';
}

/** `str(arguments.get(key) or '')`. */
function stringArg(args: Record<string, unknown>, key: string): string {
  const value = getArg(args, key);
  return pyTruthy(value) ? pyStr(value) : '';
}

/** Python `text.count(sub)`: non-overlapping occurrences, scanning left to right (`sub` non-empty). */
export function countOccurrences(text: string, sub: string): number {
  let count = 0;
  for (let i = text.indexOf(sub); i !== -1; i = text.indexOf(sub, i + sub.length)) count++;
  return count;
}

/**
 * True when every line break of `text` is CRLF (at least one, no bare LF, no lone CR). Such a file is
 * written back with CRLF after an Edit.
 */
export function isUniformlyCrlf(text: string): boolean {
  let crlf = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    if (text.charCodeAt(i - 1) !== 0x0d) return false;
    crlf++;
  }
  return crlf > 0 && countOccurrences(text, '\r') === crlf;
}

/**
 * The Edit tool. Arguments: `file_path` (or `path`), `old_string` (non-empty), `new_string` (missing →
 * delete), `replace_all` (boolean, or a string/number read as the reference's `_truthy`). The file is
 * read as the reference does (UTF-8 with U+FFFD for invalid bytes, universal newlines, so the model's LF
 * strings match a CRLF file); `old_string` must occur exactly once unless `replace_all`; replacement is
 * literal. Observation: `Edited <display path> (<N> replacement[s]).`
 *
 * Source of the behaviour: `_edit` in `frognano/harness/leaf/tool_runner.py` (microsoft/FrogNano).
 * Deliberate improvement: a uniformly CRLF file is written back with CRLF (the reference rewrote it as
 * LF, turning a one-line fix into a whole-file diff). Files with mixed line ends become LF, as in the
 * reference.
 */
export async function editTool(args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
  const workdir = ctx.sandbox.workdir;
  const path = toolPathArgument(args, 'file_path', workdir, ctx.settings.homeDir);
  const oldString = stringArg(args, 'old_string');
  const newString = stringArg(args, 'new_string');
  if (oldString === '') throw new PythonError('ValueError', 'old_string must be non-empty');
  let raw: string;
  try {
    raw = decodeUtf8(await ctx.sandbox.readFile(path, { maxBytes: ctx.settings.readMaxBytes }));
  } catch (err) {
    throw err instanceof SandboxFileError ? toPythonFileError(err, path, workdir) : err;
  }
  const crlf = isUniformlyCrlf(raw);
  const text = translateNewlines(raw);
  // A lone surrogate never occurs in decoded text (Python would find no match); JavaScript could
  // match half of a surrogate pair.
  const count = LONE_SURROGATE.test(oldString) ? 0 : countOccurrences(text, oldString);
  const replaceAll = truthyFlag(getArg(args, 'replace_all'));
  if (count === 0) throw new PythonError('ValueError', 'old_string was not found');
  if (count !== 1 && !replaceAll) {
    throw new PythonError(
      'ValueError',
      `old_string matched ${count} times; set replace_all=true or use a more specific old_string`,
    );
  }
  let updated: string;
  if (replaceAll) {
    updated = text.split(oldString).join(newString);
  } else {
    const at = text.indexOf(oldString);
    updated = text.slice(0, at) + newString + text.slice(at + oldString.length);
  }
  if (crlf && !LONE_SURROGATE.test(updated)) updated = updated.replace(/\r?\n/g, '\r\n');
  await writeWorkspaceText(ctx, path, updated);
  const changed = replaceAll ? count : 1;
  return `Edited ${displayPath(path, workdir)} (${changed} replacement${changed !== 1 ? 's' : ''}).`;
}
