/**
 * Path patterns a sandbox matches while it walks a directory ({@link Sandbox.findFiles}), so that
 * a selective Glob neither lists nor transfers the whole tree and never stops at an entry cap.
 *
 * A pattern is a list of components, each matching path segments below the directory:
 * - `any`: zero or more directory levels whose names do not start with `.` (Python glob's `**`);
 *   as the last component, every file below whose path has no segment starting with `.`;
 * - `regex`: one name that the regular expression (JavaScript source, flags `su`, anchored by the
 *   caller) matches; a name starting with `.` only when `hidden` is true;
 * - `literal`: one name, exactly.
 * Every component but the last matches directories; the last matches files.
 */

/** One component of a {@link PathPattern}. */
export type PathPatternComponent =
  { kind: 'any' } | { kind: 'regex'; source: string; hidden: boolean } | { kind: 'literal'; name: string };

/** A path pattern: at least one component. */
export type PathPattern = readonly PathPatternComponent[];

/** Compiled form: per component, a name test (`undefined` for `any`). */
export type CompiledPathPattern = ReadonlyArray<((name: string) => boolean) | undefined>;

/**
 * Compile a pattern. Throws `SyntaxError` when a `regex` source does not compile.
 */
export function compilePathPattern(pattern: PathPattern): CompiledPathPattern {
  return pattern.map((c) => {
    if (c.kind === 'any') return undefined;
    if (c.kind === 'literal') return (name: string) => name === c.name;
    const re = new RegExp(c.source, 'su');
    return (name: string) => (c.hidden || !name.startsWith('.')) && re.test(name);
  });
}

/** The states reachable without consuming a segment (an `any` may match zero levels). */
function closure(compiled: CompiledPathPattern, states: Iterable<number>): number[] {
  const out = new Set<number>();
  const stack = [...states];
  while (stack.length > 0) {
    const i = stack.pop() as number;
    if (out.has(i) || i >= compiled.length) continue;
    out.add(i);
    if (compiled[i] === undefined) stack.push(i + 1);
  }
  return [...out];
}

/** The states at the walk's starting directory. */
export function startStates(compiled: CompiledPathPattern): number[] {
  return closure(compiled, [0]);
}

/** The states in the child directory `name` of a directory in `states`; empty: prune it. */
export function enterDirectory(
  compiled: CompiledPathPattern,
  states: readonly number[],
  name: string,
): number[] {
  const last = compiled.length - 1;
  const next: number[] = [];
  for (const i of states) {
    const test = compiled[i];
    if (test === undefined) {
      if (!name.startsWith('.')) next.push(i);
    } else if (i < last && test(name)) {
      next.push(i + 1);
    }
  }
  return closure(compiled, next);
}

/** True when the file `name` in a directory in `states` matches the whole pattern. */
export function fileMatches(compiled: CompiledPathPattern, states: readonly number[], name: string): boolean {
  const last = compiled.length - 1;
  for (const i of states) {
    if (i !== last) continue;
    const test = compiled[i];
    if (test === undefined ? !name.startsWith('.') : test(name)) return true;
  }
  return false;
}

/** True when `relativePath` (`/`-separated, below the walk's directory) matches `compiled`. */
export function pathMatches(compiled: CompiledPathPattern, relativePath: string): boolean {
  const parts = relativePath.split('/').filter((p) => p !== '');
  const file = parts.pop();
  if (file === undefined) return false;
  let states = startStates(compiled);
  for (const part of parts) {
    states = enterDirectory(compiled, states, part);
    if (states.length === 0) return false;
  }
  return fileMatches(compiled, states, file);
}
