import { parseArgs } from 'node:util';
import { loadEnv, type AppEnv } from '../../config/env.js';
import { createLogger, type Logger } from '../../observability/logger.js';

/**
 * The `main` of a long-running command (`serve`, `worker`): parse `--help` (an unknown option: the
 * usage on stderr and 2), read the environment
 * (a missing or malformed variable throws `CONFIG_INVALID`, which the CLI prints and exits 1 on),
 * start, wait for SIGTERM or SIGINT, close gracefully, return 0.
 *
 * @param start starts the service; its `close()` drains it.
 * @param stopping the log line written when the signal arrives.
 */
export async function runService(
  argv: string[],
  usage: string,
  start: (env: AppEnv, logger: Logger) => Promise<{ close(): Promise<void> }>,
  stopping: string,
): Promise<number> {
  let values: { help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (err) {
    // A usage error: the message and the usage on stderr, exit 2 (as every command does).
    process.stderr.write(`${(err as Error).message}\n\n${usage}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const env = loadEnv();
  const logger = createLogger({ level: env.logLevel, format: env.logFormat });
  for (const warning of env.warnings) logger.warn(warning);
  // Listened for from the start: a SIGTERM while start-up waits (Redis unreachable) still stops it.
  const signalled = waitForSignal(['SIGTERM', 'SIGINT']);
  const service = await Promise.race([start(env, logger), signalled.then(() => null)]);
  if (service === null) {
    logger.info({ signal: await signalled }, 'stopping during start-up');
    exitSoon(0);
    return 0;
  }
  const signal = await signalled;
  logger.info({ signal }, stopping);
  await service.close();
  exitSoon(0);
  return 0;
}

/** Resolve with the name of the first of `signals` the process receives. */
export function waitForSignal(signals: NodeJS.Signals[]): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const handler = (signal: NodeJS.Signals) => {
      for (const s of signals) process.off(s, handler);
      resolve(signal);
    };
    for (const s of signals) process.on(s, handler);
  });
}

/**
 * Exit with `code` in one second if something (a library timer or socket) still holds the event loop
 * after a clean shutdown; the timer itself does not keep the process alive.
 */
export function exitSoon(code: number): void {
  setTimeout(() => process.exit(code), 1000).unref();
}
