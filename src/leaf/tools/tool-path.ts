/**
 * Paths as the reference Leaf tool runner handles them (`_path`, `_resolve`, `_display` of
 * `frognano/harness/leaf/tool_runner.py`, microsoft/FrogNano, built on Python's `pathlib`):
 * a relative path is joined to the workspace, `~` expands to the home directory, pathlib drops empty
 * and `.` components (but keeps `..`), error messages quote that absolute path, and observations name
 * a file relative to the workspace when it lies inside it.
 *
 * Known limit: `_display` resolved symlinks (`Path.resolve()`); here `..` is resolved lexically and
 * symlinks are not followed (the Sandbox interface has no realpath), so a path through a symlink inside
 * the workspace is shown as given rather than as its target.
 */
import { PythonError, pythonOsError, OUTSIDE_WORKSPACE_SUFFIX } from './python-error.js';
import { pyStr, pyTruthy } from './python-values.js';
import { SandboxFileError } from '../../sandbox/sandbox.js';
import { getArg } from './tool-context.js';

/** Python `PurePosixPath(text)` rendered back to a string (`a//b/./c/` → `a/b/c`, `''` → `.`). */
export function pathlibNormalize(text: string): string {
  let root = '';
  if (text.startsWith('/')) root = text.startsWith('//') && !text.startsWith('///') ? '//' : '/';
  const parts = text.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0) return root === '' ? '.' : root;
  return root + parts.join('/');
}

/**
 * The absolute path the reference would open for the argument text `value`: `Path(value).expanduser()`,
 * joined to `workdir` when relative. Throws {@link PythonError} `RuntimeError` for `~user` other than
 * `~root` (the reference pods had no other users).
 */
export function resolveToolPath(value: string, workdir: string, homeDir: string): string {
  let text = value;
  if (text.startsWith('~')) {
    const slash = text.indexOf('/');
    const first = slash === -1 ? text : text.slice(0, slash);
    const rest = slash === -1 ? '' : text.slice(slash);
    const user = first.slice(1);
    if (user !== '' && user !== 'root') {
      throw new PythonError('RuntimeError', 'Could not determine home directory.');
    }
    text = (user === '' ? homeDir : '/root') + rest;
  }
  const normalized = pathlibNormalize(text);
  if (normalized.startsWith('/')) return normalized;
  return pathlibNormalize(`${workdir}/${normalized}`);
}

/** Resolve `.`/`..` lexically in an absolute path (`/a/b/../c` → `/a/c`; `..` at the root stays `/`). */
export function lexicalResolve(absolute: string): string {
  const out: string[] = [];
  for (const part of absolute.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return `/${out.join('/')}`;
}

/** True when the absolute `path` lies inside (or is) `workdir`, after lexical resolution. */
export function isInsideWorkspace(path: string, workdir: string): boolean {
  const resolved = lexicalResolve(path);
  const root = lexicalResolve(workdir);
  return resolved === root || resolved.startsWith(root === '/' ? '/' : `${root}/`);
}

/**
 * How an observation names `path` (absolute, pathlib-normalized): relative to the workspace with `/`
 * separators when inside it (`.` for the workspace itself), else the path unchanged.
 */
export function displayPath(path: string, workdir: string): string {
  const resolved = lexicalResolve(path);
  const root = lexicalResolve(workdir);
  if (resolved === root) return '.';
  const prefix = root === '/' ? '/' : `${root}/`;
  return resolved.startsWith(prefix) ? resolved.slice(prefix.length) : path;
}

/**
 * The reference's `_path(arguments, key)`: `arguments[key] or arguments['path']` (Python truthiness),
 * `str()` of it, resolved against the workspace. Throws {@link PythonError}
 * `ValueError: <key> is required` when both are missing or falsy, and `ValueError: embedded null byte`
 * for a path holding NUL (as Python's `open()` does).
 */
export function toolPathArgument(
  args: Record<string, unknown>,
  key: string,
  workdir: string,
  homeDir: string,
): string {
  const primary = getArg(args, key);
  const value = pyTruthy(primary) ? primary : getArg(args, 'path');
  if (!pyTruthy(value)) throw new PythonError('ValueError', `${key} is required`);
  const path = resolveToolPath(pyStr(value), workdir, homeDir);
  if (path.includes('\0')) throw new PythonError('ValueError', 'embedded null byte');
  return path;
}

/**
 * Turn a {@link SandboxFileError} about `path` into the Python `OSError` the reference would have
 * raised for it; other errors (sandbox gone, exec failures) are returned unchanged for the caller to
 * rethrow. A refusal because the path leaves the workspace (lexically or through a symlink) is a
 * `PermissionError` with {@link OUTSIDE_WORKSPACE_SUFFIX} appended.
 */
export function toPythonFileError(err: unknown, path: string, workdir: string): unknown {
  if (!(err instanceof SandboxFileError)) return err;
  const escape = err.errno === 'EACCES' && (!isInsideWorkspace(path, workdir) || isEscapeRefusal(err));
  return pythonOsError(err.errno, path, escape ? OUTSIDE_WORKSPACE_SUFFIX : '');
}

/**
 * True when the sandbox's message says it refused the path because it leaves the workspace (the local
 * driver writes `EACCES: Permission denied (symlink points outside the workspace): '<path>'`).
 */
function isEscapeRefusal(err: SandboxFileError): boolean {
  return /outside the workspace\)/.test(err.message);
}
