import { spawn } from 'node:child_process';
import { abortReason, AppError } from '../app-error.js';

/** Options of {@link runGit}. */
export interface RunGitOptions {
  /** Working directory of the git process. */
  cwd?: string;
  /**
   * Extra environment variables (e.g. from {@link gitAuthEnv} or author identity). They are added to
   * the minimal environment described at {@link gitEnvironment}; nothing else of the worker's
   * environment reaches git.
   */
  env?: Record<string, string>;
  /** Bytes or text written to git's standard input (closed afterwards). */
  input?: string | Buffer;
  /** Wall-clock limit in milliseconds (default 600 000); git is killed with SIGKILL on expiry. */
  timeoutMs?: number;
  /** Aborting kills git (SIGKILL); the call then throws the signal's reason (`abortReason`: `CANCELLED`…). */
  signal?: AbortSignal;
  /**
   * Strings to blank out of error messages (e.g. the installation token). Git is never given a secret
   * on its command line, but a server may echo a header back; this is the second line of defence.
   */
  secrets?: readonly string[];
  /** Cap on captured stdout in bytes (default 256 MiB); more is an error, never silently cut. */
  maxOutputBytes?: number;
}

/** Result of {@link runGit}: standard output as bytes and text, standard error as text. */
export interface RunGitResult {
  stdout: Buffer;
  stderr: string;
}

const DEFAULT_TIMEOUT_MS = 600_000;
const DEFAULT_MAX_OUTPUT = 256 * 1024 * 1024;

/**
 * Variables copied from the worker's environment into git's, because a company network needs them
 * (proxies, the CA bundle of a GitHub Enterprise Server with an internal certificate). Everything else
 * (the App private key, the webhook secret, …) stays out of git's environment.
 */
const PASSED_THROUGH = [
  'PATH',
  'HOME',
  'TMPDIR',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'all_proxy',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
];

/**
 * The environment of every git process the worker starts: the pass-through variables above, plus
 * - `GIT_CONFIG_GLOBAL=/dev/null`: the worker user's `~/.gitconfig` (credential helpers that would
 *   store the token, `url.*.insteadOf` rewrites) does not apply; the system config (`/etc/gitconfig`,
 *   the image's, e.g. `http.sslCAInfo`) still does;
 * - `GIT_TERMINAL_PROMPT=0` and empty `GIT_ASKPASS`/`SSH_ASKPASS`: a missing credential fails at once
 *   instead of waiting for a prompt;
 * - `LC_ALL=C`: messages in English, so errors can be read in logs;
 * - `GIT_PROTOCOL_FROM_USER=0` and `GIT_ALLOW_PROTOCOL=http:https:file`: no `ext::` or other transports,
 *   whatever a repository's submodules or a server's redirect say.
 */
export function gitEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of PASSED_THROUGH) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return {
    ...env,
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    LC_ALL: 'C',
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_ALLOW_PROTOCOL: 'http:https:file',
    ...extra,
  };
}

/**
 * Run `git <args>` (argv, no shell) and collect its output.
 *
 * @returns stdout (bytes) and stderr (text) of a run that exited with status 0.
 * @throws AppError `GIT_FAILED` (not retryable) when git exits non-zero, times out or cannot start;
 *   the message holds the command's first argument and the end of stderr, with `secrets` blanked.
 *   `details` has `{ args, exitCode, stderr }` (args never contain secrets: see {@link gitAuthEnv}).
 * @throws AppError the signal's reason (`abortReason`: `CANCELLED`…) when `signal` aborted.
 */
export function runGit(args: readonly string[], options: RunGitOptions = {}): Promise<RunGitResult> {
  const secrets = (options.secrets ?? []).filter((s) => s.length > 0);
  const scrub = (text: string): string => secrets.reduce((t, s) => t.split(s).join('[redacted]'), text);
  const maxOutput = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  return new Promise<RunGitResult>((resolve, reject) => {
    if (options.signal?.aborted) {
      reject(abortReason(options.signal));
      return;
    }
    const child = spawn('git', [...args], {
      cwd: options.cwd,
      env: gitEnvironment(options.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let overflow = false;
    let timedOut = false;
    const kill = (): void => {
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    options.signal?.addEventListener('abort', kill, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxOutput) {
        overflow = true;
        kill();
        return;
      }
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      // Keep the last 16 KiB: the end of stderr says why git failed.
      err = (err + chunk.toString('utf8')).slice(-16_384);
    });
    // EPIPE when git exits before reading its input is reported through 'close' below.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
    const done = (error: AppError | null): void => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', kill);
      if (error) reject(error);
      else resolve({ stdout: Buffer.concat(out), stderr: scrub(err) });
    };
    child.on('error', (e) => {
      done(new AppError('GIT_FAILED', `could not start git: ${e.message}`, { cause: e }));
    });
    child.on('close', (code, signal) => {
      if (options.signal?.aborted) {
        done(abortReason(options.signal));
        return;
      }
      if (code === 0 && !overflow) {
        done(null);
        return;
      }
      const stderr = scrub(err).trim();
      const why = timedOut
        ? `timed out after ${options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`
        : overflow
          ? `printed more than ${maxOutput} bytes`
          : code === null
            ? `killed by ${signal}`
            : `exit ${code}`;
      done(
        new AppError(
          'GIT_FAILED',
          `git ${args[0] ?? ''} failed (${why})${stderr ? `: ${lastLines(stderr, 5)}` : ''}`,
          {
            details: { args: [...args], exitCode: code, stderr: lastLines(stderr, 20) },
          },
        ),
      );
    });
  });
}

function lastLines(text: string, n: number): string {
  return text.split('\n').slice(-n).join('\n');
}
