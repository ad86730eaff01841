import { constants as osConstants } from 'node:os';
import { decodeUtf8, truncateObservation } from '../observation.js';
import { PythonError } from './python-error.js';
import { formatFixed1, pyFloat, pyStr, pyTruthy } from './python-values.js';
import { translateNewlines } from './python-text.js';
import { getArg, type ToolContext } from './tool-context.js';

/** Largest delay a Node timer accepts (ms); a longer timeout is clamped to it (about 24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The reference's `_timeout_seconds`: `timeout_ms` (milliseconds) wins when present and not null;
 * else `timeout` in seconds, where a value above 1000 is taken as milliseconds (models mix the two);
 * else `defaultSec` (not clamped: the reference printed `0.0s` for a zero default). At least 0.1 s
 * otherwise. Throws {@link PythonError} for values `float()` rejects.
 *
 * @returns the timeout in seconds (possibly `Infinity`).
 */
export function bashTimeoutSeconds(args: Record<string, unknown>, defaultSec: number): number {
  const timeoutMs = getArg(args, 'timeout_ms');
  // Python's max(0.1, x) returns 0.1 for NaN (NaN > 0.1 is false).
  const atLeast = (x: number): number => (x > 0.1 ? x : 0.1);
  if (timeoutMs !== undefined && timeoutMs !== null) return atLeast(pyFloat(timeoutMs) / 1000);
  const raw = getArg(args, 'timeout');
  if (raw === undefined || raw === null) return defaultSec;
  const value = pyFloat(raw);
  return atLeast(value > 1000 ? value / 1000 : value);
}

/** Python's `returncode`: the exit status, or minus the signal number when a signal ended the process. */
function returnCode(exitCode: number | null, signal: NodeJS.Signals | null): number {
  if (exitCode !== null) return exitCode;
  const number =
    signal === null ? undefined : (osConstants.signals as Record<string, number | undefined>)[signal];
  return number === undefined ? -1 : -number;
}

/**
 * The Bash tool. Arguments: `command` (required), `timeout` (seconds; above 1000 read as ms),
 * `timeout_ms`, `description` (ignored). Runs `bash -lc <command>` in the sandbox, cwd = the workspace,
 * no shell state kept between calls, stdin empty. Observation:
 * `Exit code: <N>\nSTDOUT:\n<out>\nSTDERR:\n<err>` (N negative for a signal), or on timeout
 * `Timed out after <s>s\nSTDOUT:\n<out so far>\nSTDERR:\n<err so far>`; capped at
 * `settings.bashOutputChars` characters.
 *
 * Source of the behaviour: `_bash` in `frognano/harness/leaf/tool_runner.py` (microsoft/FrogNano):
 * output of a finished command gets universal newlines (CRLF and lone CR → LF); output of a timed-out
 * one is kept raw. Deliberate improvements: invalid UTF-8 becomes U+FFFD (the reference failed with
 * `UnicodeDecodeError`), and a timeout kills the whole process group (the reference killed only bash).
 *
 * Throws {@link PythonError} for bad arguments, and the sandbox's `AppError` (`SANDBOX_GONE`,
 * `SANDBOX_EXEC_FAILED`) when the command cannot be run at all.
 */
export async function bashTool(args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
  const rawCommand = getArg(args, 'command');
  const command = pyTruthy(rawCommand) ? pyStr(rawCommand) : '';
  if (command === '') throw new PythonError('ValueError', 'command is required');
  // subprocess refuses NUL in an argument; without this the exec would fail and end the trajectory.
  if (command.includes('\0')) throw new PythonError('ValueError', 'embedded null byte');
  const timeoutSec = bashTimeoutSeconds(args, ctx.settings.bashDefaultTimeoutSec);
  const result = await ctx.sandbox.exec(['/bin/bash', ctx.settings.bashLoginShell ? '-lc' : '-c', command], {
    // subprocess.run(timeout=max(0.1, timeout)); the message shows the unclamped value.
    timeoutMs: Math.min(MAX_TIMER_MS, Math.round(Math.max(0.1, timeoutSec) * 1000)),
    stdin: '',
    maxOutputBytes: ctx.settings.bashMaxOutputBytes,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  let observation: string;
  if (result.timedOut) {
    observation =
      `Timed out after ${formatFixed1(timeoutSec)}s\n` +
      `STDOUT:\n${decodeUtf8(result.stdout)}\nSTDERR:\n${decodeUtf8(result.stderr)}`;
  } else {
    observation =
      `Exit code: ${returnCode(result.exitCode, result.signal)}\n` +
      `STDOUT:\n${translateNewlines(decodeUtf8(result.stdout))}\n` +
      `STDERR:\n${translateNewlines(decodeUtf8(result.stderr))}`;
  }
  return truncateObservation(observation, ctx.settings.bashOutputChars);
}
