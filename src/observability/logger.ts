import { createRequire } from 'node:module';
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { AppError } from '../app-error.js';

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

/** Where a child logger's `name` binding goes instead of a second `name` key (see {@link createLogger}). */
const COMPONENT = Symbol('frognano.logger.component');
type WithComponent = Logger & { [COMPONENT]?: string };

/**
 * The `err` serializer: pino's standard one (`type`, `message` and `stack`, each with the `cause`
 * chain appended once, plus the error's own fields but `name`), minus the request and response an Octokit
 * `RequestError` carries (bodies and headers do not belong in a log; `status` stays, and the
 * method and URL). A string becomes `{ message }`; anything else is logged as given.
 */
export function serializeError(value: unknown): unknown {
  if (typeof value === 'string') return { message: value };
  if (!(value instanceof Error)) return value;
  const out = pino.stdSerializers.err(value) as unknown as Record<string, unknown>;
  const request = out.request as { method?: unknown; url?: unknown } | undefined;
  if (request && typeof request === 'object') out.request = { method: request.method, url: request.url };
  delete out.response;
  // `type` names the class; an own `name` (Octokit sets `HttpError`) would be a second `name` key.
  delete out.name;
  return out;
}

/**
 * Load pino-pretty (a dev dependency: installed with `npm ci`, absent from the production image).
 *
 * @throws AppError `CONFIG_INVALID` when it is not installed.
 */
function prettyStream(destination: DestinationStream | undefined): DestinationStream {
  try {
    const load = createRequire(import.meta.url);
    const pretty = load('pino-pretty') as (options: Record<string, unknown>) => DestinationStream;
    return pretty({
      colorize: destination === undefined && process.stdout.isTTY,
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ...(destination ? { destination } : {}),
    });
  } catch (err) {
    throw new AppError(
      'CONFIG_INVALID',
      'LOG_FORMAT=pretty needs pino-pretty, a dev dependency (`npm ci` installs it); use LOG_FORMAT=json in production',
      { cause: err },
    );
  }
}

/**
 * Create the process's root logger (pino, JSON lines — or pino-pretty's lines with `format:
 * 'pretty'` — on stdout unless `destination` is given).
 * Pass it down; there is no global logger. Per job, use {@link createJobLogger}.
 *
 * Every line has one `name` (the process's). A child made with a `name` binding — Probot and
 * Octokit make them (`probot`, `github`, `octokit`, …) — writes it as `component` instead, joined
 * with its parents' (`probot/github`), so a line never carries `name` twice. Errors under `err` go
 * through {@link serializeError}.
 *
 * @param options.level pino level name; default `LOG_LEVEL` or `info`.
 * @param options.format `json` (default) or `pretty` (pino-pretty, for a terminal).
 * @throws AppError `CONFIG_INVALID` for `pretty` without pino-pretty installed.
 */
export function createLogger(
  options: {
    level?: string;
    name?: string;
    format?: 'json' | 'pretty';
    destination?: DestinationStream;
  } = {},
): Logger {
  const opts: LoggerOptions = {
    name: options.name ?? 'frognano-bot',
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    serializers: { err: serializeError },
    mixin: (_obj, _level, logger) => {
      const component = (logger as WithComponent)[COMPONENT];
      return component ? { component } : {};
    },
  };
  const destination = options.format === 'pretty' ? prettyStream(options.destination) : options.destination;
  const root = destination ? pino(opts, destination) : pino(opts);
  const createChild = root.child;
  // An own property of the root: pino's children are Object.create(parent), so they inherit it.
  root.child = function child(this: WithComponent, bindings, childOptions) {
    const { name, ...rest } = bindings as Record<string, unknown>;
    if (typeof name !== 'string') return createChild.call(this, bindings, childOptions);
    const made = createChild.call(this, rest, childOptions) as unknown as WithComponent;
    const parent = this[COMPONENT];
    // Probot names its child `probot` again under ours: a repeat adds nothing.
    made[COMPONENT] = !parent ? name : parent.endsWith(name) ? parent : `${parent}/${name}`;
    return made;
  } as typeof root.child;
  return root;
}

/** A child logger carrying `{jobId, repo, issue}` on every line (DESIGN.md "Logging"). */
export function createJobLogger(parent: Logger, job: { jobId: string; repo: string; issue: number }): Logger {
  return parent.child({ jobId: job.jobId, repo: job.repo, issue: job.issue });
}

/** A logger that drops everything; for tests and library callers that pass none. */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}
