import { AppError } from '../../app-error.js';
import { LEAF_PROTOCOL } from '../../protocol/protocol.js';
import { pyStrip } from './python-values.js';

/**
 * Limits and switches of the five Leaf tools. The first four come from the reference harness's
 * `LEAF_*` environment variables (names and defaults from `frognano/harness/leaf/tool_runner.py` of
 * microsoft/FrogNano; defaults equal `LEAF_PROTOCOL.limits`); the others are ours.
 */
export interface LeafToolSettings {
  /** Read observation cap in characters (code points); `<= 0` disables. Env `LEAF_TOOL_OUTPUT_CHARS`. */
  readOutputChars: number;
  /** Bash observation cap in characters (code points); `<= 0` disables. Env `LEAF_BASH_OUTPUT_CHARS`. */
  bashOutputChars: number;
  /** Glob result cap in files (at least 1 is shown). Env `LEAF_GLOB_LIMIT`. */
  globLimit: number;
  /** Bash timeout in seconds when the call gives none. Env `LEAF_BASH_TIMEOUT_SEC`. */
  bashDefaultTimeoutSec: number;
  /**
   * Largest file Read and Edit load, in bytes (a larger one gives `OSError: [Errno 27] File too
   * large`; the reference had no cap). Default 16 MiB.
   */
  readMaxBytes: number;
  /**
   * Bytes kept of each of a command's stdout and stderr (beyond it the `[truncated N chars]` count
   * covers only what was kept; the reference kept everything). Default 8 MiB.
   */
  bashMaxOutputBytes: number;
  /** Run Bash commands as `bash -lc` (a login shell, as the reference does) rather than `bash -c`. */
  bashLoginShell: boolean;
  /** What `~` in a path expands to (Python's `Path.expanduser`); default `/root`, as in the reference pods. */
  homeDir: string;
}

/** Python `int()` of an environment value (surrounding whitespace and `_` between digits allowed). */
function parseIntEnv(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const text = pyStrip(raw);
  if (!/^[+-]?\d(?:_?\d)*$/.test(text)) {
    throw new AppError('CONFIG_INVALID', `${name} must be an integer (got ${JSON.stringify(raw)})`, {
      details: { variable: name },
    });
  }
  return Number(text.replaceAll('_', ''));
}

/**
 * Read the `LEAF_*` environment variables: `LEAF_TOOL_OUTPUT_CHARS`, `LEAF_BASH_OUTPUT_CHARS`,
 * `LEAF_GLOB_LIMIT`, `LEAF_BASH_TIMEOUT_SEC` (integers; unset or empty → the protocol default).
 *
 * Throws {@link AppError} `CONFIG_INVALID` for a value that is not an integer (the reference instead
 * returned a `ValueError` observation on every call).
 */
export function readLeafToolSettings(env: Record<string, string | undefined>): LeafToolSettings {
  const limits = LEAF_PROTOCOL.limits;
  return {
    readOutputChars: parseIntEnv(env, 'LEAF_TOOL_OUTPUT_CHARS', limits.read_output_chars),
    bashOutputChars: parseIntEnv(env, 'LEAF_BASH_OUTPUT_CHARS', limits.bash_output_chars),
    globLimit: parseIntEnv(env, 'LEAF_GLOB_LIMIT', limits.glob_limit),
    bashDefaultTimeoutSec: parseIntEnv(env, 'LEAF_BASH_TIMEOUT_SEC', limits.bash_default_timeout_sec),
    readMaxBytes: 16 * 1024 * 1024,
    bashMaxOutputBytes: 8 * 1024 * 1024,
    bashLoginShell: true,
    homeDir: '/root',
  };
}
