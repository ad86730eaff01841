import type { V1NetworkPolicy, V1Pod, V1Toleration } from '@kubernetes/client-node';

/**
 * Pure builders of the Kubernetes objects the sandbox driver creates per job: the deny-all
 * NetworkPolicy (created first) and the sandbox Pod. No I/O here, so that tests validate exactly
 * what the driver sends against the Kubernetes OpenAPI schema (`kubernetes-models`).
 *
 * Object shapes follow the Kubernetes API reference (core/v1 Pod, networking.k8s.io/v1
 * NetworkPolicy), https://kubernetes.io/docs/reference/kubernetes-api/.
 */

/** Value of `app.kubernetes.io/name` on everything FrogNano bot creates. */
export const APP_NAME = 'frognano-bot';
/** Label keys and values that mark sandbox objects; the janitor selects on them. */
export const SANDBOX_LABELS = {
  name: 'app.kubernetes.io/name',
  component: 'app.kubernetes.io/component',
  managedBy: 'app.kubernetes.io/managed-by',
  /** The job id, sanitised to a label value (see {@link toLabelValue}). */
  jobId: 'frognano.dev/job-id',
  /** The sandbox name: shared by the NetworkPolicy and every pod (re)created for it. */
  sandbox: 'frognano.dev/sandbox',
} as const;
/** Annotation keys: values that do not fit in a label. */
export const SANDBOX_ANNOTATIONS = {
  /** The job id exactly as given (labels only hold a sanitised form). */
  jobId: 'frognano.dev/job-id',
  /** ISO 8601 time after which the janitor may delete the sandbox whatever the job's state. */
  deadline: 'frognano.dev/deadline',
} as const;
/** Label selector matching every sandbox object of this app. */
export const SANDBOX_SELECTOR = `${SANDBOX_LABELS.component}=sandbox,${SANDBOX_LABELS.managedBy}=${APP_NAME}`;

/** Mount path of the workspace emptyDir: the sandbox's `workdir`. */
export const POD_WORKDIR = '/workspace';
/** Mount path of the scratch emptyDir (also HOME: the root filesystem is read-only). */
export const POD_TMPDIR = '/tmp';
/** Name of the one container of a sandbox pod. */
export const SANDBOX_CONTAINER = 'sandbox';
/** uid and gid the sandbox runs as (the sandbox image's non-root user). */
export const SANDBOX_UID = 1000;

/**
 * The idle command of the sandbox container: it does nothing until deleted, and exits at once on
 * SIGTERM (PID 1 ignores signals it has no handler for, which would make deletion wait for the
 * grace period). Only POSIX `sh` and `sleep` are needed, so any sandbox image works.
 */
export const IDLE_COMMAND: readonly string[] = [
  '/bin/sh',
  '-c',
  "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done",
];

/** Options of {@link buildSandboxPod} and {@link buildSandboxNetworkPolicy}. Units are in the names. */
export interface SandboxObjectOptions {
  /** Sandbox name (see {@link sandboxName}): NetworkPolicy name, pod name prefix, label value. */
  name: string;
  namespace: string;
  /** The job id as given to `SandboxFactory.create`. */
  jobId: string;
  /** Container image of the sandbox (git, bash, coreutils, tar, python3…; non-root uid 1000). */
  image: string;
  /** `IfNotPresent` unless told otherwise. */
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** CPU request = limit, in cores (e.g. 2 or 0.5). */
  cpuCores: number;
  /** Memory request = limit, MiB. */
  memoryMiB: number;
  /**
   * Requests and limits from the admin policy, quantity strings used as they are; they replace the
   * ones computed from `cpuCores`, `memoryMiB` and the emptyDir sizes key by key. A request not
   * given equals its limit.
   */
  resources?: { requests?: Record<string, string | undefined>; limits?: Record<string, string | undefined> };
  /** Size limit of the `/workspace` emptyDir, MiB. */
  workspaceMiB: number;
  /** Size limit of the `/tmp` emptyDir, MiB. */
  tmpMiB: number;
  /** `activeDeadlineSeconds`: the job's time limit plus a margin, seconds. */
  activeDeadlineSeconds: number;
  /** When the janitor may delete the sandbox regardless of the job (ISO 8601). */
  deadline: Date;
  /** Optional RuntimeClass, e.g. `gvisor`. */
  runtimeClassName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
  /** Name of the image pull secret in the sandbox namespace, when the registry needs one. */
  imagePullSecret?: string;
  /** ServiceAccount of the pod (deploy/: `frognano-sandbox`); its token is never mounted. */
  serviceAccountName?: string;
}

/**
 * A Kubernetes name for a job's sandbox: `fn-sbx-<job>-<suffix>`, a DNS-1123 label of at most 52
 * characters (so that `-<attempt>` pod names stay within 63).
 *
 * @param jobId any string; characters outside `[a-z0-9-]` become `-`.
 * @param suffix random lowercase alphanumerics making the name unique per sandbox.
 */
export function sandboxName(jobId: string, suffix: string): string {
  const job = jobId
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 30)
    .replace(/-+$/, '');
  const tail =
    suffix
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '')
      .slice(0, 12) || 'x';
  return `fn-sbx-${job || 'job'}-${tail}`;
}

/** Name of the pod of `name`'s `attempt`-th incarnation (0 first, then 1 and 2 after recoveries). */
export function sandboxPodName(name: string, attempt: number): string {
  return `${name}-${attempt}`;
}

/**
 * A label value for `value`: at most 63 characters of `[A-Za-z0-9._-]`, starting and ending with an
 * alphanumeric (Kubernetes label value syntax). Lossy: the exact job id is in an annotation.
 */
export function toLabelValue(value: string): string {
  const cleaned = value
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return cleaned || 'none';
}

/** Labels carried by a sandbox's NetworkPolicy and pods. */
export function sandboxLabels(name: string, jobId: string): Record<string, string> {
  return {
    [SANDBOX_LABELS.name]: APP_NAME,
    [SANDBOX_LABELS.component]: 'sandbox',
    [SANDBOX_LABELS.managedBy]: APP_NAME,
    [SANDBOX_LABELS.jobId]: toLabelValue(jobId),
    [SANDBOX_LABELS.sandbox]: name,
  };
}

function sandboxAnnotations(options: SandboxObjectOptions): Record<string, string> {
  return {
    [SANDBOX_ANNOTATIONS.jobId]: options.jobId,
    [SANDBOX_ANNOTATIONS.deadline]: options.deadline.toISOString(),
  };
}

/**
 * The NetworkPolicy that denies all ingress and all egress of the sandbox's pods. It selects pods by
 * the `frognano.dev/sandbox` label, so recreated pods are covered too; it must exist before the
 * first pod does. Listing both policy types with no rules is "deny all" (Kubernetes docs, "Network
 * Policies: Default policies").
 */
export function buildSandboxNetworkPolicy(options: SandboxObjectOptions): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: options.name,
      namespace: options.namespace,
      labels: sandboxLabels(options.name, options.jobId),
      annotations: sandboxAnnotations(options),
    },
    spec: {
      podSelector: { matchLabels: { [SANDBOX_LABELS.sandbox]: options.name } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [],
    },
  };
}

/** Format a CPU amount in cores as a Kubernetes quantity (`2`, `500m`). */
export function cpuQuantity(cores: number): string {
  if (!(cores > 0)) throw new RangeError(`cpu must be positive, got ${cores}`);
  return Number.isInteger(cores) ? String(cores) : `${Math.max(1, Math.round(cores * 1000))}m`;
}

function definedOnly(q: Record<string, string | undefined> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(q ?? {}).filter((e): e is [string, string] => e[1] !== undefined));
}

/**
 * The sandbox Pod of `attempt`: one container running {@link IDLE_COMMAND}, commands arrive by
 * exec. Hardened as DESIGN.md "Security model" says: non-root uid 1000, no privilege escalation,
 * all capabilities dropped, read-only root filesystem, seccomp `RuntimeDefault`, no service-account
 * token, no service links, no environment from secrets, requests = limits (Guaranteed QoS) unless
 * the policy's `resources` say otherwise,
 * `restartPolicy: Never` and `activeDeadlineSeconds`. `/workspace` and `/tmp` are size-limited
 * emptyDirs; the pod's ephemeral-storage limit covers both plus 256 MiB for the container's logs
 * and writable layer.
 */
export function buildSandboxPod(options: SandboxObjectOptions, attempt = 0): V1Pod {
  const ephemeralMiB = options.workspaceMiB + options.tmpMiB + 256;
  const computed: Record<string, string> = {
    cpu: cpuQuantity(options.cpuCores),
    memory: `${Math.ceil(options.memoryMiB)}Mi`,
    'ephemeral-storage': `${Math.ceil(ephemeralMiB)}Mi`,
  };
  const limits = { ...computed, ...definedOnly(options.resources?.limits) };
  const requests = { ...limits, ...definedOnly(options.resources?.requests) };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: sandboxPodName(options.name, attempt),
      namespace: options.namespace,
      labels: sandboxLabels(options.name, options.jobId),
      annotations: sandboxAnnotations(options),
    },
    spec: {
      restartPolicy: 'Never',
      activeDeadlineSeconds: Math.ceil(options.activeDeadlineSeconds),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 5,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      shareProcessNamespace: false,
      ...(options.serviceAccountName ? { serviceAccountName: options.serviceAccountName } : {}),
      ...(options.runtimeClassName ? { runtimeClassName: options.runtimeClassName } : {}),
      ...(options.nodeSelector ? { nodeSelector: { ...options.nodeSelector } } : {}),
      ...(options.tolerations ? { tolerations: options.tolerations.map((t) => ({ ...t })) } : {}),
      ...(options.imagePullSecret ? { imagePullSecrets: [{ name: options.imagePullSecret }] } : {}),
      securityContext: {
        runAsNonRoot: true,
        runAsUser: SANDBOX_UID,
        runAsGroup: SANDBOX_UID,
        fsGroup: SANDBOX_UID,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: SANDBOX_CONTAINER,
          image: options.image,
          imagePullPolicy: options.imagePullPolicy ?? 'IfNotPresent',
          command: [...IDLE_COMMAND],
          workingDir: POD_WORKDIR,
          // Built from scratch: nothing from secrets or config maps, no credentials.
          env: [
            { name: 'HOME', value: POD_TMPDIR },
            { name: 'TMPDIR', value: POD_TMPDIR },
            { name: 'LANG', value: 'C.UTF-8' },
            { name: 'PATH', value: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' },
          ],
          resources: { requests, limits },
          securityContext: {
            runAsNonRoot: true,
            runAsUser: SANDBOX_UID,
            runAsGroup: SANDBOX_UID,
            allowPrivilegeEscalation: false,
            privileged: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
            seccompProfile: { type: 'RuntimeDefault' },
          },
          volumeMounts: [
            { name: 'workspace', mountPath: POD_WORKDIR },
            { name: 'tmp', mountPath: POD_TMPDIR },
          ],
        },
      ],
      volumes: [
        { name: 'workspace', emptyDir: { sizeLimit: `${Math.ceil(options.workspaceMiB)}Mi` } },
        { name: 'tmp', emptyDir: { sizeLimit: `${Math.ceil(options.tmpMiB)}Mi` } },
      ],
    },
  };
}
