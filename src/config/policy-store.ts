import { watch as fsWatch, readFileSync, type FSWatcher } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { AppError } from '../app-error.js';
import type { Logger } from '../observability/logger.js';
import { EMPTY_ADMIN_POLICY, parseAdminPolicy, type AdminPolicy } from './policy.js';

/** A policy file that failed to load on a reload (the previous policy stays in force). */
export interface PolicyLoadError {
  message: string;
  /** Validation messages (file, key path, problem), as in `AppError.details.messages`. */
  messages: string[];
  /** When the failed reload happened. */
  at: Date;
}

/** Result of {@link PolicyStore.reload}. */
export type PolicyReloadResult = { ok: true; changed: boolean } | { ok: false; error: PolicyLoadError };

/** The admin policy in force, kept up to date from its file. */
export interface PolicyStore {
  /** The policy file path, or `null` for a static store. */
  readonly path: string | null;
  /** The policy in force (the last one that loaded without error). */
  current(): AdminPolicy;
  /** The error of the latest reload when it failed (for `/readyz` and the admin view), else `null`. */
  lastError(): PolicyLoadError | null;
  /** Read the file again now. Never throws: a broken file keeps the current policy. */
  reload(): Promise<PolicyReloadResult>;
  /** Stop watching. Idempotent. */
  close(): void;
}

/** Options of {@link createPolicyStore}. */
export interface PolicyStoreOptions {
  /** Path of the policy YAML (env `POLICY_FILE`). */
  path: string;
  logger: Logger;
  /** Watch the file and reload on change (default true). */
  watch?: boolean;
  /** Period of the stat fallback check in milliseconds (default 10 000). */
  intervalMs?: number;
  /** Called after a reload that changed the policy. */
  onChange?: (policy: AdminPolicy) => void;
}

/** Wait after a file-system event before reading, in ms: editors and kubelet write in several steps. */
const DEBOUNCE_MS = 100;

function toLoadError(err: unknown): PolicyLoadError {
  const messages =
    err instanceof AppError && Array.isArray(err.details?.messages)
      ? (err.details.messages as string[])
      : [err instanceof Error ? err.message : String(err)];
  return { message: err instanceof Error ? err.message : String(err), messages, at: new Date() };
}

/** One warning per deprecated key the policy uses (e.g. `attempts` for `candidates`). */
function logDeprecations(log: Logger, policy: AdminPolicy): void {
  for (const warning of policy.warnings ?? []) log.warn({ policyWarning: true }, warning);
}

/**
 * Load the admin policy from `options.path` and keep it current.
 *
 * At start the file is read synchronously: a missing or invalid file throws, so the server stops
 * instead of running with a policy nobody wrote. Later, a changed file takes effect without a
 * restart; if it is broken, the last good policy stays in force, the error is logged and
 * {@link PolicyStore.lastError} returns it until a good file loads.
 *
 * Change detection has two parts. `fs.watch` on the *directory*, not the file: a Kubernetes
 * ConfigMap volume updates by writing a new timestamped directory and atomically swapping the
 * `..data` symlink, so the file's own inode never changes and a watch on it would never fire (editors
 * that save by rename do the same). And a periodic `stat` (which follows symlinks) comparing inode,
 * size and mtime, because `fs.watch` is not reliable everywhere (network file systems, inotify
 * limits, some container runtimes).
 *
 * @throws AppError `CONFIG_INVALID` (with `details.messages`) when the file is missing or invalid at start.
 */
export function createPolicyStore(options: PolicyStoreOptions): PolicyStore {
  const { path, logger } = options;
  const log = logger.child({ component: 'policy-store', policyFile: path });

  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new AppError('CONFIG_INVALID', `cannot read the admin policy ${path}: ${(err as Error).message}`, {
      cause: err,
      details: {
        source: path,
        messages: [`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`],
      },
    });
  }
  let policy = parseAdminPolicy(text, path);
  let lastText = text;
  let error: PolicyLoadError | null = null;
  let signature: string | null = null;
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();
  log.info({ rules: policy.rules.length }, 'admin policy loaded');
  logDeprecations(log, policy);

  const fileSignature = async (): Promise<string | null> => {
    try {
      const s = await stat(path);
      return `${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch {
      return null;
    }
  };
  void fileSignature().then((s) => {
    signature ??= s;
  });

  const doReload = async (): Promise<PolicyReloadResult> => {
    signature = await fileSignature();
    try {
      const newText = await readFile(path, 'utf8');
      const parsed = parseAdminPolicy(newText, path);
      const changed = newText !== lastText;
      policy = parsed;
      lastText = newText;
      if (error) log.info('admin policy loads again; the reload error is cleared');
      error = null;
      if (changed) {
        log.info({ rules: parsed.rules.length }, 'admin policy reloaded');
        logDeprecations(log, parsed);
        options.onChange?.(parsed);
      }
      return { ok: true, changed };
    } catch (err) {
      error = toLoadError(err);
      log.error(
        { err: error.message, messages: error.messages },
        'admin policy reload failed; the last good policy stays in force',
      );
      return { ok: false, error };
    }
  };

  // Reloads run one at a time, in order.
  const reload = (): Promise<PolicyReloadResult> => {
    const next = queue.then(doReload);
    queue = next.catch(() => undefined);
    return next;
  };

  let debounce: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (closed) return;
    clearTimeout(debounce);
    debounce = setTimeout(() => void reload(), DEBOUNCE_MS);
    debounce.unref();
  };

  let watcher: FSWatcher | undefined;
  let interval: NodeJS.Timeout | undefined;
  if (options.watch ?? true) {
    try {
      watcher = fsWatch(dirname(path), { persistent: false }, () => schedule());
      watcher.on('error', (err) => {
        log.warn({ err: err.message }, 'watching the policy directory failed; relying on the periodic check');
        watcher?.close();
        watcher = undefined;
      });
    } catch (err) {
      log.warn({ err }, 'cannot watch the policy directory; relying on the periodic check');
    }
    interval = setInterval(() => {
      void fileSignature().then((s) => {
        if (!closed && s !== signature) schedule();
      });
    }, options.intervalMs ?? 10_000);
    interval.unref();
  }

  return {
    path,
    current: () => policy,
    lastError: () => error,
    reload,
    close: () => {
      closed = true;
      clearTimeout(debounce);
      clearInterval(interval);
      watcher?.close();
    },
  };
}

/**
 * A store that never changes: for a server without `POLICY_FILE` (built-in defaults only) and for
 * tests.
 */
export function createStaticPolicyStore(policy: AdminPolicy = EMPTY_ADMIN_POLICY): PolicyStore {
  return {
    path: null,
    current: () => policy,
    lastError: () => null,
    reload: () => Promise.resolve({ ok: true, changed: false }),
    close: () => undefined,
  };
}
