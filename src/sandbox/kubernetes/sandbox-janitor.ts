import { CoreV1Api, NetworkingV1Api, type KubeConfig, type V1ObjectMeta } from '@kubernetes/client-node';
import { createSilentLogger, type Logger } from '../../observability/logger.js';
import { apiErrorInfo, isNotFound } from './pod-status.js';
import { SANDBOX_ANNOTATIONS, SANDBOX_LABELS, SANDBOX_SELECTOR } from './sandbox-objects.js';

/** Options of {@link createSandboxJanitor}. */
export interface SandboxJanitorOptions {
  kubeConfig: KubeConfig;
  /** The sandbox namespace. */
  namespace: string;
  /**
   * Whether the job is still running somewhere (e.g. its BullMQ job is active). Called once per
   * job id per sweep. A throw counts as "active": when in doubt, nothing is deleted.
   */
  isJobActive: (jobId: string) => Promise<boolean>;
  /** Objects younger than this are left alone (a worker may be creating them), ms. Default 60 000. */
  minAgeMs?: number;
  logger?: Logger;
  /** Clock, for tests. */
  now?: () => Date;
}

/** What one sweep did. */
export interface SweepReport {
  /** Pod names deleted. */
  pods: string[];
  /** NetworkPolicy names deleted. */
  networkPolicies: string[];
  /** Objects that could not be deleted (they are tried again next sweep). */
  errors: string[];
}

/** The janitor: {@link SandboxJanitor.sweep} once, or {@link SandboxJanitor.start} periodically. */
export interface SandboxJanitor {
  /** Delete sandbox pods and NetworkPolicies whose job is no longer active or whose deadline passed. */
  sweep(): Promise<SweepReport>;
  /** Sweep now and every `intervalMs` (overlapping sweeps are skipped). */
  start(intervalMs: number): void;
  /** Stop the periodic sweeps and wait for a running one. */
  stop(): Promise<void>;
}

/**
 * Sandbox garbage collection (issue "Janitor"): a worker that died mid-job leaves its pod and
 * NetworkPolicy behind; the janitor, run when a worker starts and periodically, deletes every
 * sandbox object (label selector {@link SANDBOX_SELECTOR}) whose job (annotation
 * `frognano.dev/job-id`) is no longer active, or whose deadline (annotation `frognano.dev/deadline`,
 * the job's time limit plus twice the margin) has passed. A pod's NetworkPolicy is deleted only
 * with, or after, its pods, so a live pod is never left without its deny-all policy.
 */
export function createSandboxJanitor(options: SandboxJanitorOptions): SandboxJanitor {
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const networking = options.kubeConfig.makeApiClient(NetworkingV1Api);
  const logger = options.logger ?? createSilentLogger();
  const minAgeMs = options.minAgeMs ?? 60_000;
  const now = options.now ?? (() => new Date());
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<SweepReport> | undefined;

  const isStale = async (
    meta: V1ObjectMeta | undefined,
    cache: Map<string, Promise<boolean>>,
  ): Promise<boolean> => {
    const created = meta?.creationTimestamp ? new Date(meta.creationTimestamp).getTime() : 0;
    if (now().getTime() - created < minAgeMs) return false;
    const deadline = meta?.annotations?.[SANDBOX_ANNOTATIONS.deadline];
    if (deadline && Date.parse(deadline) < now().getTime()) return true;
    const jobId = meta?.annotations?.[SANDBOX_ANNOTATIONS.jobId];
    if (!jobId) return true;
    if (!cache.has(jobId)) {
      cache.set(
        jobId,
        options.isJobActive(jobId).catch((err: unknown) => {
          logger.warn(
            { jobId, err: (err as Error).message },
            'janitor: isJobActive failed; keeping the sandbox',
          );
          return true;
        }),
      );
    }
    return !(await cache.get(jobId)!);
  };

  const sweepOnce = async (): Promise<SweepReport> => {
    const report: SweepReport = { pods: [], networkPolicies: [], errors: [] };
    const cache = new Map<string, Promise<boolean>>();
    const [podList, policyList] = await Promise.all([
      core.listNamespacedPod({ namespace: options.namespace, labelSelector: SANDBOX_SELECTOR }),
      networking.listNamespacedNetworkPolicy({
        namespace: options.namespace,
        labelSelector: SANDBOX_SELECTOR,
      }),
    ]);
    const livePods = new Set<string>();
    for (const pod of podList.items) {
      const name = pod.metadata?.name;
      if (!name) continue;
      if (!(await isStale(pod.metadata, cache))) {
        livePods.add(pod.metadata?.labels?.[SANDBOX_LABELS.sandbox] ?? '');
        continue;
      }
      try {
        await core.deleteNamespacedPod({ name, namespace: options.namespace, gracePeriodSeconds: 0 });
        report.pods.push(name);
      } catch (err) {
        if (isNotFound(err)) report.pods.push(name);
        else {
          livePods.add(pod.metadata?.labels?.[SANDBOX_LABELS.sandbox] ?? '');
          report.errors.push(`pod ${name}: ${apiErrorInfo(err).message}`);
        }
      }
    }
    for (const policy of policyList.items) {
      const name = policy.metadata?.name;
      if (!name || livePods.has(name)) continue;
      if (!(await isStale(policy.metadata, cache))) continue;
      try {
        await networking.deleteNamespacedNetworkPolicy({ name, namespace: options.namespace });
        report.networkPolicies.push(name);
      } catch (err) {
        if (isNotFound(err)) report.networkPolicies.push(name);
        else report.errors.push(`networkpolicy ${name}: ${apiErrorInfo(err).message}`);
      }
    }
    if (report.pods.length + report.networkPolicies.length + report.errors.length > 0) {
      logger.info(report, 'janitor: stale sandbox objects deleted');
    }
    return report;
  };

  const sweep = (): Promise<SweepReport> => {
    running ??= sweepOnce().finally(() => {
      running = undefined;
    });
    return running;
  };

  return {
    sweep,
    start(intervalMs) {
      if (timer) return;
      const tick = (): void => {
        if (running) return;
        sweep().catch((err: unknown) =>
          logger.warn({ err: apiErrorInfo(err).message }, 'janitor sweep failed'),
        );
      };
      tick();
      timer = setInterval(tick, intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running?.catch(() => undefined);
    },
  };
}
