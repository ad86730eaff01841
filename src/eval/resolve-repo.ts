import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { AppError } from '../app-error.js';
import { configInvalid, formatIssues, parseYamlText } from '../config/validation-messages.js';

/**
 * Where a task's `repo` (`owner/name`) is cloned from: a local git repository (working tree or
 * bare) or a clone URL inside the network. Two sources, tried in this order: a mapping file
 * (YAML or JSON, `owner/name: path-or-url`; relative paths are relative to the file), then a folder
 * of mirrors (`--repos DIR`: `DIR/owner/name`, `DIR/owner__name`, `DIR/name`, each also with `.git`).
 */

/** A resolved repository. */
export type RepoLocation = { kind: 'path'; path: string } | { kind: 'url'; url: string };

/** Options of {@link createRepoResolver}. */
export interface RepoResolverOptions {
  /** Entries of a mapping file, `owner/name` → path or URL (see {@link loadRepoMapping}). */
  mapping?: { source: string; entries: Record<string, string> };
  /** Folder of mirrors. */
  reposDir?: string;
}

const URL_LIKE = /^(?:[a-z][a-z0-9+.-]*:\/\/|[\w.-]+@[\w.-]+:)/i;

const mappingSchema = z.record(
  z.string().regex(/^[\w.-]+\/[\w.-]+$/, { error: 'keys must be "owner/name"' }),
  z.string({ error: 'must be a path or a clone URL' }).min(1, { error: 'must be a path or a clone URL' }),
  { error: 'must be a mapping of "owner/name" to a path or a clone URL' },
);

/**
 * Read a mapping file. Paths in it are made absolute against the file's folder; URLs stay as they are.
 *
 * @throws AppError `CONFIG_INVALID` with one message per bad entry; `TASKS_UNREADABLE` when unreadable.
 */
export async function loadRepoMapping(
  file: string,
): Promise<{ source: string; entries: Record<string, string> }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new AppError(
      'TASKS_UNREADABLE',
      `cannot read the repository mapping ${file}: ${(err as Error).message}`,
    );
  }
  // YAML 1.2 is a superset of JSON: one parser for both.
  const parsed = parseYamlText(text, file);
  if (!parsed.ok) throw configInvalid(file, parsed.messages);
  const result = mappingSchema.safeParse(parsed.value, { reportInput: true });
  if (!result.success) {
    throw configInvalid(file, formatIssues(file, result.error.issues, { knownKeys: () => undefined }));
  }
  const base = dirname(resolve(file));
  const entries: Record<string, string> = {};
  for (const [repo, where] of Object.entries(result.data)) {
    entries[repo] = URL_LIKE.test(where) || isAbsolute(where) ? where : join(base, where);
  }
  return { source: file, entries };
}

/** Whether `dir` is a git repository itself: a working tree with `.git`, or a bare repository. */
function isGitRepository(dir: string): boolean {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return false;
  if (existsSync(join(dir, '.git'))) return true;
  return existsSync(join(dir, 'HEAD')) && existsSync(join(dir, 'objects')) && existsSync(join(dir, 'refs'));
}

/** The mirror folders tried for `owner/name` under `dir`, in order. */
export function mirrorCandidates(dir: string, repo: string): string[] {
  const [owner = '', name = ''] = repo.split('/');
  return [join(dir, owner, name), join(dir, `${owner}__${name}`), join(dir, name)].flatMap((p) => [
    p,
    `${p}.git`,
  ]);
}

/**
 * Make the resolver of task repositories.
 *
 * @returns `resolveRepo(repo)`, which throws AppError `REPO_NOT_FOUND` (not retryable) naming every
 *   place tried, or when a mapped path is not a git repository.
 */
export function createRepoResolver(options: RepoResolverOptions): (repo: string) => RepoLocation {
  return (repo) => {
    const tried: string[] = [];
    const mapped = options.mapping?.entries[repo];
    if (options.mapping) {
      if (mapped !== undefined) {
        if (URL_LIKE.test(mapped)) return { kind: 'url', url: mapped };
        if (isGitRepository(mapped)) return { kind: 'path', path: mapped };
        tried.push(`${mapped} (from ${options.mapping.source}; not a git repository)`);
      } else {
        tried.push(`${options.mapping.source} (no entry for ${repo})`);
      }
    }
    if (options.reposDir) {
      for (const candidate of mirrorCandidates(options.reposDir, repo)) {
        if (isGitRepository(candidate)) return { kind: 'path', path: candidate };
        tried.push(candidate);
      }
    }
    const how =
      tried.length === 0 ? 'no mapping file and no --repos folder given' : `tried ${tried.join(', ')}`;
    throw new AppError('REPO_NOT_FOUND', `no repository for "${repo}": ${how}`);
  };
}

/** A location as git takes it (a path or a URL). */
export function cloneSource(location: RepoLocation): string {
  return location.kind === 'path' ? location.path : location.url;
}
