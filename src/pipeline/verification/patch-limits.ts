import { posix } from 'node:path';
import { changedLineCount, type PatchFile } from './parse-patch.js';
import { findSecrets } from './secret-patterns.js';

/**
 * Patch limits (issue 6, "Patch limits"): a patch is refused when it changes too many files or
 * lines, leaves a file above the size limit, adds or changes a binary file (unless allowed), adds a
 * symbolic link that points outside the repository, adds a submodule, or adds a secret.
 */

/** The limits. Units are in the names. */
export interface PatchLimits {
  /** Files the patch may add, change or delete. */
  maxFilesChanged: number;
  /** Lines the patch may add plus remove, over all files (binary files count 0). */
  maxLinesChanged: number;
  /** Size in bytes of each added or changed file after the patch. */
  maxFileBytes: number;
  /** Whether added or changed binary files are allowed (deleting one always is). */
  allowBinary: boolean;
}

/**
 * Defaults: generous for a bug fix (a fix touching 50 files or 3000 lines is not one a reviewer can
 * check anyway), 1 MiB per file, no binary files.
 */
export const DEFAULT_PATCH_LIMITS: Readonly<PatchLimits> = Object.freeze({
  maxFilesChanged: 50,
  maxLinesChanged: 3000,
  maxFileBytes: 1024 * 1024,
  allowBinary: false,
});

/** A reason to refuse a patch. The fields say what and where, never the content of a secret. */
export type PatchViolation =
  | { kind: 'too_many_files'; count: number; limit: number }
  | { kind: 'too_many_lines'; count: number; limit: number }
  | { kind: 'file_too_large'; path: string; sizeBytes: number; limit: number }
  | { kind: 'binary_file'; path: string }
  | {
      kind: 'symlink_outside';
      path: string;
      /** The link's target as written (cut to 200 characters). */
      target: string;
    }
  | { kind: 'submodule'; path: string }
  | { kind: 'secret'; path: string; line: number; secretKind: string };

/** Facts about one file of the patched tree (from the worker's clone; see readPatchedFileFacts). */
export interface PatchedFileFacts {
  /** Git mode in the index after the patch (`100644`, `100755`, `120000`, `160000`). */
  mode: string;
  /** Size of the blob in bytes (for a symlink: the length of its target). */
  sizeBytes: number;
}

/** Input of {@link checkPatchLimits}. */
export interface PatchLimitsInput {
  /** The parsed patch. */
  files: readonly PatchFile[];
  /**
   * Facts about the files of the patched tree, by path; files the patch deleted are absent. When a
   * path is missing, sizes are not checked for it (the symlink check uses the patch text).
   */
  facts?: ReadonlyMap<string, PatchedFileFacts>;
  limits?: Partial<PatchLimits>;
}

const SYMLINK_MODE = '120000';
const GITLINK_MODE = '160000';

/**
 * Check a patch against the limits.
 *
 * A symbolic link is "outside" when its target is absolute, or when, resolved against the link's
 * folder, it climbs above the repository root or enters `.git` (the worker's clone has one).
 *
 * @returns every violation found (empty: the patch is within the limits), in a stable order:
 *   counts first, then per file in patch order, then secrets.
 */
export function checkPatchLimits(input: PatchLimitsInput): PatchViolation[] {
  const limits: PatchLimits = { ...DEFAULT_PATCH_LIMITS, ...input.limits };
  const violations: PatchViolation[] = [];
  const { files } = input;

  if (files.length > limits.maxFilesChanged) {
    violations.push({ kind: 'too_many_files', count: files.length, limit: limits.maxFilesChanged });
  }
  const lines = files.reduce((n, f) => n + changedLineCount(f), 0);
  if (lines > limits.maxLinesChanged) {
    violations.push({ kind: 'too_many_lines', count: lines, limit: limits.maxLinesChanged });
  }

  for (const file of files) {
    if (file.status === 'deleted') continue;
    if (file.newMode === GITLINK_MODE) {
      violations.push({ kind: 'submodule', path: file.path });
      continue;
    }
    if (file.newMode === SYMLINK_MODE) {
      const target = file.addedLines.map((l) => l.text).join('\n');
      // A mode-only change to a link has no added lines: its old target was in the repository already.
      if (file.addedLines.length > 0 && symlinkLeavesRepository(file.path, target)) {
        violations.push({ kind: 'symlink_outside', path: file.path, target: target.slice(0, 200) });
      }
      continue;
    }
    if (file.binary && !limits.allowBinary) {
      violations.push({ kind: 'binary_file', path: file.path });
    }
    const size = input.facts?.get(file.path)?.sizeBytes;
    if (size !== undefined && size > limits.maxFileBytes) {
      violations.push({
        kind: 'file_too_large',
        path: file.path,
        sizeBytes: size,
        limit: limits.maxFileBytes,
      });
    }
  }

  for (const s of findSecrets(files)) {
    violations.push({ kind: 'secret', path: s.path, line: s.line, secretKind: s.kind });
  }
  return violations;
}

/**
 * Whether a symbolic link at `linkPath` (relative to the repository root) with `target` points
 * outside the repository or into its `.git` folder.
 */
export function symlinkLeavesRepository(linkPath: string, target: string): boolean {
  if (target === '' || target.includes('\0') || target.includes('\n')) return true;
  if (target.startsWith('/') || /^[A-Za-z]:[\\/]/.test(target) || target.startsWith('\\')) return true;
  const resolved = posix.normalize(posix.join(posix.dirname(linkPath), target));
  if (resolved === '..' || resolved.startsWith('../')) return true;
  return resolved === '.git' || resolved.startsWith('.git/');
}

/**
 * The refusal text for the status comment: every violation in one sentence each (at most 10
 * listed), with file and line for secrets but never the secret.
 *
 * @param violations non-empty result of {@link checkPatchLimits}.
 */
export function describePatchViolations(violations: readonly PatchViolation[]): string[] {
  const out = violations.slice(0, 10).map(describeViolation);
  if (violations.length > out.length) out.push(`…and ${violations.length - out.length} more.`);
  return out;
}

function describeViolation(v: PatchViolation): string {
  switch (v.kind) {
    case 'too_many_files':
      return `The change touches ${v.count} files; the limit is ${v.limit}.`;
    case 'too_many_lines':
      return `The change adds and removes ${v.count} lines; the limit is ${v.limit}.`;
    case 'file_too_large':
      return `\`${v.path}\` would be ${formatBytes(v.sizeBytes)}; the limit per file is ${formatBytes(v.limit)}.`;
    case 'binary_file':
      return `\`${v.path}\` is a binary file; binary files are not allowed in machine-written changes.`;
    case 'symlink_outside':
      return `\`${v.path}\` is a symbolic link pointing outside the repository (to \`${v.target.replace(/`/g, "'")}\`).`;
    case 'submodule':
      return `\`${v.path}\` adds or changes a submodule; submodules are not allowed in machine-written changes.`;
    case 'secret':
      return `Line ${v.line} of \`${v.path}\` adds what looks like a ${v.secretKind}; secrets must never be committed (it is not repeated here).`;
  }
}

/** `512 B`, `3.2 KiB`, `1.5 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MiB`;
}
