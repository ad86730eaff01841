import type { V1Pod } from '@kubernetes/client-node';
import { z } from 'zod';
import { AppError } from '../../app-error.js';

/**
 * Reading a sandbox pod's status (core/v1 PodStatus: `phase`, `conditions`, `containerStatuses[]
 * .state.{waiting,running,terminated}.reason`; Kubernetes docs "Pod Lifecycle") into what the
 * driver acts on. Pure functions, so the classification is unit-tested on plain objects.
 */

/** Waiting reasons that mean the image will not be pulled without someone fixing something. */
const IMAGE_PULL_REASONS = new Set([
  'ImagePullBackOff',
  'ErrImagePull',
  'InvalidImageName',
  'ErrImageNeverPull',
]);
/** Waiting reasons that mean the container cannot be created as specified. */
const CREATE_FAILED_REASONS = new Set([
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** Where a pod is on its way to Running. */
export type PodStartup =
  { state: 'running' } | { state: 'pending'; detail: string } | { state: 'failed'; error: AppError };

/**
 * Classify a pod while waiting for it to run.
 *
 * - Running with the container running → `running`;
 * - image pull errors (`ErrImagePull`, `ImagePullBackOff`…) → `failed`, not retryable: the image
 *   name, tag or pull secret must be fixed;
 * - `PodScheduled=False` with reason `Unschedulable` → `failed`, retryable (capacity may free up);
 * - container creation errors, or the pod already Failed/Succeeded → `failed`;
 * - anything else → `pending`, with a detail for the timeout message.
 *
 * @param image the image asked for, named in messages.
 */
export function classifyPodStartup(pod: V1Pod, image: string): PodStartup {
  const phase = pod.status?.phase ?? 'Pending';
  const name = pod.metadata?.name ?? '(unnamed)';
  const container = pod.status?.containerStatuses?.[0];
  const waiting = container?.state?.waiting;
  if (phase === 'Running' && container?.state?.running) return { state: 'running' };
  if (waiting?.reason && IMAGE_PULL_REASONS.has(waiting.reason)) {
    return {
      state: 'failed',
      error: new AppError(
        'SANDBOX_UNAVAILABLE',
        `the sandbox image "${image}" cannot be pulled (${waiting.reason}: ${waiting.message ?? 'no message'}); ` +
          'fix: check SANDBOX_IMAGE (or the policy\u2019s image), that the tag exists, and the image pull secret',
        { details: { pod: name, reason: waiting.reason } },
      ),
    };
  }
  if (waiting?.reason && CREATE_FAILED_REASONS.has(waiting.reason)) {
    return {
      state: 'failed',
      error: new AppError(
        'SANDBOX_UNAVAILABLE',
        `the sandbox container cannot be created (${waiting.reason}: ${waiting.message ?? 'no message'})`,
        { details: { pod: name, reason: waiting.reason } },
      ),
    };
  }
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    return {
      state: 'failed',
      error: new AppError(
        'SANDBOX_UNAVAILABLE',
        `the sandbox pod cannot be scheduled: ${scheduled.message ?? 'no node fits'}; ` +
          'fix: lower the sandbox cpu/memory in the policy, add nodes, or check nodeSelector/tolerations/runtimeClassName',
        { retryable: true, details: { pod: name, reason: 'Unschedulable' } },
      ),
    };
  }
  if (phase === 'Failed' || phase === 'Succeeded') {
    const death = podDeath(pod);
    return {
      state: 'failed',
      error: new AppError(
        'SANDBOX_UNAVAILABLE',
        `the sandbox pod ended before it was ready (${death?.reason ?? phase}: ${death?.message ?? 'no message'}); ` +
          'fix: the image must have /bin/sh and run as uid 1000 (see deploy/docker/sandbox.Dockerfile)',
        { details: { pod: name, reason: death?.reason ?? phase } },
      ),
    };
  }
  const detail = waiting?.reason
    ? `${phase}, ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`
    : scheduled?.status === 'False'
      ? `${phase}, not scheduled: ${scheduled.message ?? scheduled.reason ?? ''}`
      : phase;
  return { state: 'pending', detail };
}

/** Why a pod is no longer usable. */
export interface PodDeath {
  /** `Deleted`, `Evicted`, `OOMKilled`, `DeadlineExceeded`, `Error`, `Completed`… */
  reason: string;
  message: string;
}

/**
 * Whether a pod died, and why: `null` while it is Running with its container running. `pod` null
 * means the API answered 404 (deleted).
 */
export function podDeath(pod: V1Pod | null): PodDeath | null {
  if (!pod) return { reason: 'Deleted', message: 'the pod no longer exists' };
  if (pod.metadata?.deletionTimestamp) return { reason: 'Deleted', message: 'the pod is being deleted' };
  // The pod's own reason first (Evicted, DeadlineExceeded): its container then only says "Error".
  const phase = pod.status?.phase;
  if ((phase === 'Failed' || phase === 'Succeeded') && pod.status?.reason) {
    return { reason: pod.status.reason, message: pod.status.message ?? `the pod is ${phase}` };
  }
  const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
  if (terminated) {
    return {
      reason: terminated.reason ?? 'Error',
      message: terminated.message ?? `the container exited with code ${terminated.exitCode}`,
    };
  }
  if (phase === 'Failed' || phase === 'Succeeded') {
    return { reason: phase, message: pod.status?.message ?? `the pod is ${phase}` };
  }
  return null;
}

/** A Kubernetes `Status` (error body), the fields used; validated since it comes from outside. */
const statusBodySchema = z.looseObject({
  reason: z.string().optional(),
  message: z.string().optional(),
  code: z.number().optional(),
});

/**
 * HTTP status and message of an error thrown by `@kubernetes/client-node` v2 (`ApiException`:
 * `code`, and `body`, the response text, usually a JSON `Status`). Anything else: status undefined.
 */
export function apiErrorInfo(err: unknown): { status: number | undefined; reason?: string; message: string } {
  const e = err as { code?: unknown; body?: unknown; message?: unknown } | null;
  const status = typeof e?.code === 'number' ? e.code : undefined;
  let message = err instanceof Error ? err.message : String(err);
  let reason: string | undefined;
  if (status !== undefined) {
    const raw = e?.body;
    let body: unknown = raw;
    if (typeof raw === 'string') {
      try {
        body = JSON.parse(raw);
      } catch {
        body = { message: raw.slice(0, 500) };
      }
    }
    const parsed = statusBodySchema.safeParse(body);
    if (parsed.success) {
      message = parsed.data.message ?? message;
      reason = parsed.data.reason;
    }
  }
  return { status, reason, message };
}

/** True for a 404 from the Kubernetes API. */
export function isNotFound(err: unknown): boolean {
  return apiErrorInfo(err).status === 404;
}
