import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { AppError } from '../../app-error.js';
import type { EgressTarget } from '../../sandbox/egress-probe.js';

/**
 * What the local commands (`run`, `eval mine`, `eval run`) hold while they work: an abort signal
 * that SIGINT/SIGTERM fire with AppError `CANCELLED` ("interrupted"), and a loopback canary — a TCP
 * port on 127.0.0.1 that accepts and drops connections — that every probed sandbox must fail to
 * reach (a sandbox that reaches it shares the host's network).
 */
export interface LocalRunGuard {
  signal: AbortSignal;
  /** The canary's probe target (`host loopback`). */
  canaryTarget: EgressTarget;
  /** Stop listening for the signals and close the canary. */
  release(): Promise<void>;
}

/** Start a {@link LocalRunGuard}; call `release()` in a `finally`. */
export async function startLocalRunGuard(): Promise<LocalRunGuard> {
  const controller = new AbortController();
  const onSignal = (): void => controller.abort(new AppError('CANCELLED', 'interrupted (SIGINT/SIGTERM)'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const canary = await startCanary();
  return {
    signal: controller.signal,
    canaryTarget: {
      name: 'host loopback',
      url: `http://127.0.0.1:${(canary.address() as AddressInfo).port}`,
    },
    async release() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await new Promise((r) => canary.close(r));
    },
  };
}

async function startCanary(): Promise<Server> {
  const server = createServer((socket) => socket.destroy()).unref();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}
