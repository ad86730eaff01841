import type { PathPattern } from '../../sandbox/path-pattern.js';
import { SandboxFileError } from '../../sandbox/sandbox.js';
import { PythonError, pythonOsError, OUTSIDE_WORKSPACE_SUFFIX } from './python-error.js';
import { pyStr, pyTruthy } from './python-values.js';
import { compareCodePoints } from './python-text.js';
import { fnmatchToRegExp, hasMagic, pythonGlob } from './python-glob.js';
import { displayPath, lexicalResolve, pathlibNormalize, resolveToolPath } from './tool-path.js';
import { getArg, type ToolContext } from './tool-context.js';

/**
 * The files below `dir` that the glob `components` can match, through the sandbox, matched while
 * it walks (see {@link toPathPattern}); `null` when the directory does not exist or is not one
 * (Python's glob silently finds nothing there). Never capped: a cap would drop matches. Throws
 * {@link PythonError} `PermissionError` when the sandbox refuses the directory (outside the
 * workspace).
 */
async function listFiles(
  ctx: ToolContext,
  dir: string,
  components: readonly string[],
): Promise<string[] | null> {
  const at = lexicalResolve(dir);
  try {
    const pattern = toPathPattern(components);
    if (pattern !== undefined) return await ctx.sandbox.findFiles(at, pattern);
    const listed = await ctx.sandbox.list(at, { limit: Number.MAX_SAFE_INTEGER });
    return listed.files;
  } catch (err) {
    if (!(err instanceof SandboxFileError)) throw err;
    if (err.errno === 'EACCES') throw pythonOsError('EACCES', dir, OUTSIDE_WORKSPACE_SUFFIX);
    return null;
  }
}

/**
 * The sandbox-side form of glob components: `**` → `any`, a component with magic → its fnmatch
 * regular expression (hidden names only when it starts with `.`, as glob does), else `literal`.
 * `undefined` when a component is `..`: what it reaches depends on the tree above, so the whole
 * subtree is listed instead.
 */
export function toPathPattern(components: readonly string[]): PathPattern | undefined {
  if (components.length === 0 || components.includes('..')) return undefined;
  return components.map((c) => {
    if (c === '**') return { kind: 'any' } as const;
    if (hasMagic(c))
      return { kind: 'regex', source: fnmatchToRegExp(c).source, hidden: c.startsWith('.') } as const;
    return { kind: 'literal', name: c } as const;
  });
}

/**
 * The Glob tool. Arguments: `pattern` (required; relative to `path`, default the workspace) and
 * optional `path`. Matches as Python's `glob.glob(path/pattern, recursive=True)` (see
 * `python-glob.ts`), keeps files only, names them like Read does, sorts them in code-point order,
 * shows at most `settings.globLimit` and then `... N more files`; `No files matched.` when none.
 *
 * Source of the behaviour: `_glob` in `frognano/harness/leaf/tool_runner.py` (microsoft/FrogNano).
 * Differences: files outside the workspace are never listed (a pattern or path leaving it gives a
 * `PermissionError` observation), and `.git` directories are not searched (Sandbox.list skips them).
 */
export async function globTool(args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
  const rawPattern = getArg(args, 'pattern');
  const pattern = pyTruthy(rawPattern) ? pyStr(rawPattern) : '';
  if (pattern === '') throw new PythonError('ValueError', 'pattern is required');
  const workdir = ctx.sandbox.workdir;
  const rawPath = getArg(args, 'path');
  const root = resolveToolPath(pyTruthy(rawPath) ? pyStr(rawPath) : '.', workdir, ctx.settings.homeDir);
  const full = pathlibNormalize(pattern.startsWith('/') ? pattern : `${root}/${pattern}`);
  const found = await pythonGlob(full, (dir, components) => listFiles(ctx, dir, components));
  const matches = found.map((m) => displayPath(pathlibNormalize(m), workdir));
  matches.sort(compareCodePoints);
  const limit = Math.max(1, ctx.settings.globLimit);
  if (matches.length === 0) return 'No files matched.';
  const shown = matches.slice(0, limit).join('\n');
  return matches.length > limit ? `${shown}\n... ${matches.length - limit} more files` : shown;
}
