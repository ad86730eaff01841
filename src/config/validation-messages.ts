import YAML from 'yaml';
import type { z } from 'zod';
import { AppError } from '../app-error.js';

/**
 * Validation messages for configuration files, in the style people know from Renovate: every message
 * names the file, the key path, the problem and what is allowed, e.g.
 *
 *     .github/frognano.yml: maxSteps: must be a whole number from 1 to 150 (got "lots")
 *     .github/frognano.yml: tesCommand: unknown key; did you mean "testCommand"?
 *     policy.yaml:4:3: invalid YAML: Map keys must be unique
 *
 * The `(got …)` part quotes untrusted input: it is cut to a few dozen characters, and whoever puts
 * these messages into Markdown (the status comment) must render them inside a code block.
 */

/** Most characters of an offending value quoted in a message. */
const MAX_QUOTED_CHARS = 60;

/** Key path as people write it: `rules[2].sandbox.image`. */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/**
 * A short, safe description of a value for the `(got …)` part of a message: strings quoted and cut,
 * numbers and booleans as written, lists and mappings by kind only (they may be long).
 */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'string': {
      const cut = value.length > MAX_QUOTED_CHARS ? `${value.slice(0, MAX_QUOTED_CHARS)}…` : value;
      return JSON.stringify(cut);
    }
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'object':
      return value instanceof Date ? JSON.stringify(value.toISOString()) : 'a mapping';
    default:
      return typeof value;
  }
}

/** Keys compared loosely: case, `-` and `_` ignored (`test_command` ≈ `testCommand`). */
function normalizeKey(key: string): string {
  return key.toLowerCase().replace(/[-_\s]/g, '');
}

/** Levenshtein edit distance (insert, delete, substitute: cost 1 each). */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost));
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/**
 * The known key closest to `key`, when it is close enough to be a likely typo (at most 2 edits, or a
 * third of the key's length for long keys, after ignoring case, `-` and `_`); otherwise `undefined`.
 */
export function suggestKey(key: string, known: readonly string[]): string | undefined {
  const wanted = normalizeKey(key);
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(wanted, normalizeKey(candidate));
    if (!best || distance < best.distance) best = { key: candidate, distance };
  }
  if (!best) return undefined;
  const allowed = Math.max(2, Math.floor(wanted.length / 3));
  return best.distance <= allowed ? best.key : undefined;
}

/** How {@link formatIssues} learns about keys at a path (for unknown-key messages). */
export interface KeyHelp {
  /** Keys allowed at the object found at `path` (indices included), or `undefined` if not known. */
  knownKeys(path: readonly PropertyKey[]): readonly string[] | undefined;
  /**
   * Why a key is refused even though it exists elsewhere (e.g. "is admin-only: …"), or `undefined`
   * to treat it as unknown.
   */
  refusedKey?(path: readonly PropertyKey[], key: string): string | undefined;
}

/**
 * Turn zod issues (from `safeParse(data, { reportInput: true })`) into messages of the form
 * `<source>: <key path>: <problem> (got <value>)`. Schemas in this folder give their own messages
 * ("must be a whole number from 1 to 150"); this adds the file, the path and the offending value.
 */
export function formatIssues(source: string, issues: readonly z.core.$ZodIssue[], help: KeyHelp): string[] {
  const messages: string[] = [];
  for (const issue of issues) {
    const where = (path: readonly PropertyKey[]): string =>
      path.length === 0 ? `${source}:` : `${source}: ${formatKeyPath(path)}:`;
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const path = [...issue.path, key];
        const refused = help.refusedKey?.(issue.path, key);
        if (refused !== undefined) {
          messages.push(`${where(path)} ${refused}`);
          continue;
        }
        const known = help.knownKeys(issue.path) ?? [];
        const suggestion = suggestKey(key, known);
        const hint = suggestion
          ? `; did you mean "${suggestion}"?`
          : known.length > 0
            ? `; allowed keys here: ${known.join(', ')}`
            : '';
        messages.push(`${where(path)} unknown key${hint}`);
      }
      continue;
    }
    const input = (issue as { input?: unknown }).input;
    if (input === undefined && (issue.code === 'invalid_type' || issue.code === 'invalid_union')) {
      messages.push(`${where(issue.path)} is required and ${issue.message}`);
      continue;
    }
    const got = input === undefined ? '' : ` (got ${describeValue(input)})`;
    messages.push(`${where(issue.path)} ${issue.message}${got}`);
  }
  // A value can fail several checks with the same message (too short and not matching the pattern).
  return [...new Set(messages)];
}

/**
 * Parse one YAML document (YAML 1.2 core schema, via the `yaml` package). An empty file is `{}`.
 *
 * @returns `{ ok: true, value }`, or `{ ok: false, messages }` with one message per syntax error,
 *   each `<source>:<line>:<column>: invalid YAML: <problem>` (line and column from the `yaml`
 *   package, 1-based).
 */
export function parseYamlText(
  text: string,
  source: string,
): { ok: true; value: unknown } | { ok: false; messages: string[] } {
  const doc = YAML.parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    const messages = doc.errors.map((err) => {
      const pos = err.linePos?.[0];
      const at = pos ? `${source}:${pos.line}:${pos.col}` : source;
      // prettyErrors appends " at line L, column C:" and a code excerpt; the position is already in
      // front of the message, so keep only the problem.
      const problem =
        err.code === 'MULTIPLE_DOCS'
          ? 'the file must hold a single YAML document (found a second "---")'
          : (err.message.split(/ at line \d+, column \d+/)[0] ?? err.message).trim();
      return `${at}: invalid YAML: ${problem}`;
    });
    return { ok: false, messages };
  }
  try {
    // maxAliasCount bounds "billion laughs" expansion of anchors in untrusted files.
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    return { ok: true, value: value ?? {} };
  } catch (err) {
    return {
      ok: false,
      messages: [`${source}: invalid YAML: ${err instanceof Error ? err.message : String(err)}`],
    };
  }
}

/**
 * The error every config parser throws: `AppError('CONFIG_INVALID')`, not retryable, with all
 * messages in `details.messages` (the status comment lists them) and the first ones in `message`.
 */
export function configInvalid(source: string, messages: string[]): AppError {
  const head = messages.slice(0, 3).join('; ');
  const more = messages.length > 3 ? ` (and ${messages.length - 3} more)` : '';
  return new AppError('CONFIG_INVALID', `invalid configuration in ${source}: ${head}${more}`, {
    retryable: false,
    details: { source, messages },
  });
}
