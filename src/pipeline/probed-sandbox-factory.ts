import type { Logger } from '../observability/logger.js';
import { assertEgressBlocked, type EgressTarget } from '../sandbox/egress-probe.js';
import type { SandboxFactory } from '../sandbox/sandbox.js';

/**
 * The one sandbox factory the pipeline uses: every sandbox it returns has passed the egress probe
 * (`assertEgressBlocked` against `targets`), the agent's and each test run's alike, because the
 * model's commands and the repository's tests are both untrusted code. A sandbox that reaches a
 * target is destroyed before the error leaves, and nothing is copied into it.
 *
 * @param factory the driver's factory (local bubblewrap, Kubernetes, a test double).
 * @param targets what must not answer from inside (GitHub, the model server, Redis, a canary…).
 * @throws (from `create`) AppError `EGRESS_NOT_BLOCKED` (not retryable) naming the reached
 *   targets, or whatever the driver or the probe threw.
 */
export function createProbedSandboxFactory(
  factory: SandboxFactory,
  targets: readonly EgressTarget[],
  logger?: Logger,
): SandboxFactory {
  return {
    driver: factory.driver,
    async create(options) {
      const sandbox = await factory.create(options);
      try {
        await assertEgressBlocked(sandbox, targets);
      } catch (err) {
        await sandbox
          .destroy()
          .catch((e: unknown) => logger?.error({ err: e }, 'could not destroy the sandbox'));
        throw err;
      }
      return sandbox;
    },
    ...(factory.removeLeftovers ? { removeLeftovers: (id: string) => factory.removeLeftovers!(id) } : {}),
    ...(factory.sweepLeftovers
      ? { sweepLeftovers: (ids: readonly string[]) => factory.sweepLeftovers!(ids) }
      : {}),
  };
}
