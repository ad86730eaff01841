import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/**
 * Paths redacted from every log line. Tokens, keys and secrets never reach a log: the installation
 * token, the App private key, the webhook secret, API keys and HTTP authorization headers.
 */
export const REDACT_PATHS: readonly string[] = [
  'token',
  '*.token',
  'installationToken',
  '*.installationToken',
  'privateKey',
  '*.privateKey',
  'webhookSecret',
  '*.webhookSecret',
  'apiKey',
  '*.apiKey',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
];

/**
 * Create the process's root logger (pino, JSON lines on stdout unless `destination` is given).
 * Pass it down; there is no global logger. Per job, use {@link createJobLogger}.
 *
 * @param options.level pino level name; default `LOG_LEVEL` or `info`.
 */
export function createLogger(
  options: { level?: string; name?: string; destination?: DestinationStream } = {},
): Logger {
  const opts: LoggerOptions = {
    name: options.name ?? 'frognano-bot',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
  };
  return options.destination ? pino(opts, options.destination) : pino(opts);
}

/** A child logger carrying `{jobId, repo, issue}` on every line (DESIGN.md "Logging"). */
export function createJobLogger(parent: Logger, job: { jobId: string; repo: string; issue: number }): Logger {
  return parent.child({ jobId: job.jobId, repo: job.repo, issue: job.issue });
}

/** A logger that drops everything; for tests and library callers that pass none. */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}
