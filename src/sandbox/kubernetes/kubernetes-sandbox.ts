import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tarStream from 'tar-stream';
import {
  CoreV1Api,
  NetworkingV1Api,
  type KubeConfig,
  type V1Pod,
  type V1Toleration,
} from '@kubernetes/client-node';
import { AppError, isAppError, isRetryableHttpStatus } from '../../app-error.js';
import { compilePathPattern, pathMatches, type PathPattern } from '../path-pattern.js';
import { createSilentLogger, type Logger } from '../../observability/logger.js';
import { assertEgressBlocked, type EgressTarget } from '../egress-probe.js';
import {
  SandboxFileError,
  type CreateSandboxOptions,
  type ExecOptions,
  type ExecResult,
  type Sandbox,
  type SandboxFactory,
} from '../sandbox.js';
import { execInPod, exitCodeFromStatus, PodExecError, type PodExecResponse } from './pod-exec.js';
import {
  COPY_IN_SCRIPT,
  ENV_NAME,
  EXEC_WRAPPER,
  FILE_ERROR_EXIT,
  KILL_SCRIPT,
  LIST_SCRIPT,
  FIND_FILES_SCRIPT,
  newNonce,
  READ_FILE_SCRIPT,
  WRITE_FILE_SCRIPT,
} from './pod-scripts.js';
import { apiErrorInfo, classifyPodStartup, isNotFound, podDeath, type PodDeath } from './pod-status.js';
import { parseQuantity, quantityMiB } from '../quantity.js';
import {
  buildSandboxNetworkPolicy,
  buildSandboxPod,
  POD_TMPDIR,
  POD_WORKDIR,
  SANDBOX_CONTAINER,
  sandboxName,
  sandboxPodName,
  type SandboxObjectOptions,
} from './sandbox-objects.js';

/** Defaults of {@link KubernetesSandboxFactoryOptions}. Units are in the names. */
export const KUBERNETES_SANDBOX_DEFAULTS = {
  cpuCores: 2,
  memoryMiB: 4096,
  workspaceMiB: 4096,
  tmpMiB: 1024,
  jobTimeLimitMs: 2 * 60 * 60 * 1000,
  deadlineMarginMs: 10 * 60 * 1000,
  startTimeoutMs: 180_000,
  pollIntervalMs: 1000,
  maxRecoveries: 2,
  maxOutputBytes: 32 * 1024 * 1024,
  copyTimeoutMs: 10 * 60 * 1000,
  /** Scripts longer than this go over stdin instead of the exec URL (whose length is bounded). */
  maxArgvScriptBytes: 8 * 1024,
  /** Grace on top of a command's own timeout before the worker gives up on the pod, ms. */
  callGraceMs: 30_000,
} as const;

/** Options of {@link createKubernetesSandboxFactory}. */
export interface KubernetesSandboxFactoryOptions {
  /** Cluster access (in a pod: `kc.loadFromCluster()`; elsewhere `kc.loadFromDefault()`). */
  kubeConfig: KubeConfig;
  /** The sandbox namespace (deploy/: `frognano-sandboxes`). */
  namespace: string;
  /** Sandbox image (deploy/docker/sandbox.Dockerfile or one built FROM it). */
  image: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** CPU request = limit per sandbox, cores. Default 2. */
  cpuCores?: number;
  /** Memory request = limit, MiB (overridden by `limits.memoryMiB` at create). Default 4096. */
  memoryMiB?: number;
  /** `/workspace` size limit, MiB (overridden by `limits.diskMiB`). Default 4096. */
  workspaceMiB?: number;
  /** `/tmp` size limit, MiB. Default 1024. */
  tmpMiB?: number;
  runtimeClassName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
  imagePullSecret?: string;
  /** ServiceAccount of sandbox pods (its token is never mounted). Default: the namespace's default. */
  serviceAccountName?: string;
  /**
   * The time limit of a sandbox whose `create` gives no `settings.timeLimitMs`, ms:
   * `activeDeadlineSeconds` is the time limit plus `deadlineMarginMs`. Default 2 h.
   */
  jobTimeLimitMs?: number;
  /** Margin added to the time limit for the pod deadline and the janitor, ms. Default 10 min. */
  deadlineMarginMs?: number;
  /** How long to wait for a pod to be Running, ms. Default 180 000. */
  startTimeoutMs?: number;
  /** Longest interval of pod status polls while waiting (they start at 50 ms and double), ms. Default 1000. */
  pollIntervalMs?: number;
  /**
   * Interval of WebSocket pings on exec connections, ms, so that proxies and load balancers with an
   * idle timeout do not cut a command that prints nothing for minutes. Default 30 000.
   */
  execPingIntervalMs?: number;
  /**
   * After an exec stream broke, how long to keep re-reading the pod before calling it a plain cut
   * stream rather than a dead pod, ms: the pod's status (OOMKilled, Failed) can lag behind the
   * stream by a few seconds. Default 5000.
   */
  deathCheckMs?: number;
  /**
   * Grace added to a command's timeout for its host-side deadline, ms (default
   * {@link KUBERNETES_SANDBOX_DEFAULTS}.callGraceMs): past it the pod is deleted and the call fails
   * with `SANDBOX_PROTOCOL_VIOLATION`. Also how long an aborted command may take to stop.
   */
  callGraceMs?: number;
  /** Times a dead pod is recreated (and the calls replayed) per sandbox. Default 2. */
  maxRecoveries?: number;
  /** Directory of the worker-side copy of `copyIn` archives (kept for replay). Default os.tmpdir(). */
  spoolDir?: string;
  /**
   * Places the sandbox must not reach (the GitHub host, the model server): probed from inside
   * every new sandbox with {@link assertEgressBlocked}; `create` fails with `EGRESS_NOT_BLOCKED`
   * when one answers (a CNI that ignores NetworkPolicy). Default none.
   */
  egressProbeTargets?: readonly EgressTarget[];
  /** Bound on the egress probe, ms. Default 5000. */
  egressProbeTimeoutMs?: number;
  /**
   * Run before the sandbox is handed out, after the egress probe, e.g.:
   * `(sb) => assertEgressBlocked(sb, targets)`. A throw destroys the sandbox and fails `create`.
   */
  verify?: (sandbox: Sandbox) => Promise<void>;
  logger?: Logger;
}

/** Internal: a call failed because the pod died (the caller may recover). */
class PodDiedError extends Error {
  readonly death: PodDeath;
  constructor(death: PodDeath) {
    super(`the sandbox pod died (${death.reason}: ${death.message})`);
    this.name = 'PodDiedError';
    this.death = death;
  }
}

/** A mutating call, recorded for replay after a pod is recreated. */
type JournalEntry =
  | { kind: 'copyIn'; spool: string; size: number; sha256: string; timeoutMs: number }
  | { kind: 'writeFile'; path: string; data: Buffer; mkdirs: boolean }
  | {
      kind: 'exec';
      command: readonly string[] | string;
      options: Omit<ExecOptions, 'signal'>;
      /** What the call returned; replay must return the same exit code and timeout flag. */
      exitCode: number | null;
      timedOut: boolean;
      /** Aborted calls replay with their measured duration as timeout and are not compared. */
      aborted: boolean;
      durationMs: number;
    };

/** Internal result of one wrapped exec. */
/** Time limit of the file scripts (read, write, list), ms. */
const FILE_SCRIPT_TIMEOUT_MS = 120_000;

/** Bytes kept on top of `maxOutputBytes` for the wrapper's preamble (`<nonce> <state>\n`). */
const PREAMBLE_ROOM = 64;

interface RawResult {
  stdout: Buffer;
  stderr: Buffer;
  code: number;
  state: 'exit' | 'timeout' | 'killed';
  outputTruncated: boolean;
  /** Set on the stand-in result of a command whose pod was OOMKilled under it (not journaled). */
  lostWithPod?: true;
}

const BASE_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: POD_TMPDIR,
  TMPDIR: POD_TMPDIR,
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  TERM: 'dumb',
  USER: 'sandbox',
  LOGNAME: 'sandbox',
  SHELL: '/bin/bash',
};

/**
 * The Kubernetes sandbox driver (`driver = 'kubernetes'`): one pod per sandbox in `namespace`,
 * behind a deny-all NetworkPolicy created first (DESIGN.md "Security model").
 *
 * `create` throws {@link AppError} `SANDBOX_UNAVAILABLE` with the fix in the message when the
 * policy or pod is refused (RBAC; namespace missing; ResourceQuota: retryable), the image cannot be
 * pulled, the pod cannot be scheduled (retryable) or is not Running within `startTimeoutMs`;
 * `EGRESS_NOT_BLOCKED` when the egress probe reached a target; and whatever `verify` throws. On
 * any of these the pod and the policy are deleted again.
 *
 * Exec: see `pod-scripts.ts` (in-pod wrapper: process group, watchdog, a preamble printed before the
 * command starts; nothing the command prints is parsed, the exit code comes from the exec status
 * channel) and `pod-exec.ts` (WebSocket). Every exec has a host-side deadline of its timeout plus
 * `callGraceMs`; past it, or when an aborted command has not ended within min(grace, 5 s), the pod
 * is deleted and the call fails with `SANDBOX_PROTOCOL_VIOLATION`. An exit status above 128 is reported as the signal 128 + n, as shells
 * report it (the in-pod shell cannot tell `exit 137` from SIGKILL). `limits.maxProcesses` is not
 * enforced per sandbox (the kubelet's pod PID limit applies); `limits.cpuSeconds` is `ulimit -t`.
 *
 * Recovery: when a call finds the pod dead (deleted, evicted, OOMKilled), the pod — and the
 * NetworkPolicy, if it is gone too — is recreated (at most `maxRecoveries` times per sandbox), and
 * the journal is replayed in order: every `copyIn`, `writeFile` and `exec` made since `create`
 * returned (reads and lists are not recorded). Each replayed exec must end with the same exit code
 * and timeout flag as originally (aborted execs are replayed with their measured duration as
 * timeout and not compared). Then the failed call is retried — except an exec during which the pod
 * was OOMKilled, which returns `exitCode: null, signal: 'SIGKILL'` and says so on stderr (and is
 * not recorded), since running it again would only run out of memory again. A diverging replay, a
 * pod that exceeded its `activeDeadlineSeconds`, or one recovery too many throws `SANDBOX_GONE`.
 */
export function createKubernetesSandboxFactory(options: KubernetesSandboxFactoryOptions): SandboxFactory {
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const networking = options.kubeConfig.makeApiClient(NetworkingV1Api);
  const logger = options.logger ?? createSilentLogger();
  const d = KUBERNETES_SANDBOX_DEFAULTS;
  return {
    driver: 'kubernetes',
    async create(createOptions: CreateSandboxOptions): Promise<Sandbox> {
      if (createOptions.hostWorkdir !== undefined) {
        throw new AppError('SANDBOX_UNAVAILABLE', 'hostWorkdir is not supported by the kubernetes driver');
      }
      const limits = createOptions.limits ?? {};
      const settings = createOptions.settings ?? {};
      const timeLimitMs = settings.timeLimitMs ?? options.jobTimeLimitMs ?? d.jobTimeLimitMs;
      const marginMs = options.deadlineMarginMs ?? d.deadlineMarginMs;
      const tmpMiB = options.tmpMiB ?? d.tmpMiB;
      const policyLimits = settings.resources?.limits ?? {};
      const objectOptions: SandboxObjectOptions = {
        name: sandboxName(createOptions.jobId, randomBytes(4).toString('hex')),
        namespace: options.namespace,
        jobId: createOptions.jobId,
        image: settings.image ?? options.image,
        imagePullPolicy: options.imagePullPolicy,
        cpuCores: policyLimits.cpu ? parseQuantity(policyLimits.cpu) : (options.cpuCores ?? d.cpuCores),
        memoryMiB: policyLimits.memory
          ? quantityMiB(policyLimits.memory)
          : (limits.memoryMiB ?? options.memoryMiB ?? d.memoryMiB),
        // The policy's ephemeral-storage limit covers the workspace, /tmp and 256 MiB of logs.
        workspaceMiB: policyLimits['ephemeral-storage']
          ? Math.max(256, quantityMiB(policyLimits['ephemeral-storage']) - tmpMiB - 256)
          : (limits.diskMiB ?? options.workspaceMiB ?? d.workspaceMiB),
        tmpMiB,
        ...(settings.resources ? { resources: settings.resources } : {}),
        activeDeadlineSeconds: Math.ceil((timeLimitMs + marginMs) / 1000),
        deadline: new Date(Date.now() + timeLimitMs + 2 * marginMs),
        runtimeClassName: settings.runtimeClassName ?? options.runtimeClassName,
        nodeSelector: options.nodeSelector,
        tolerations: options.tolerations,
        imagePullSecret: options.imagePullSecret,
        serviceAccountName: options.serviceAccountName,
      };
      const sandbox = new KubernetesSandbox({
        core,
        networking,
        kubeConfig: options.kubeConfig,
        objects: objectOptions,
        logger: logger.child({ sandbox: objectOptions.name, jobId: createOptions.jobId }),
        startTimeoutMs: options.startTimeoutMs ?? d.startTimeoutMs,
        pollIntervalMs: options.pollIntervalMs ?? d.pollIntervalMs,
        maxRecoveries: options.maxRecoveries ?? d.maxRecoveries,
        maxOutputBytes: limits.maxOutputBytes ?? d.maxOutputBytes,
        cpuSeconds: limits.cpuSeconds,
        spoolDir: options.spoolDir ?? tmpdir(),
        pingIntervalMs: options.execPingIntervalMs ?? 30_000,
        deathCheckMs: options.deathCheckMs ?? 5000,
        callGraceMs: options.callGraceMs ?? d.callGraceMs,
      });
      try {
        await sandbox.start();
        if (options.egressProbeTargets && options.egressProbeTargets.length > 0) {
          await assertEgressBlocked(sandbox, options.egressProbeTargets, {
            timeoutMs: options.egressProbeTimeoutMs,
          });
        }
        if (options.verify) await options.verify(sandbox);
        sandbox.startJournal();
        return sandbox;
      } catch (err) {
        await sandbox.destroy();
        throw err;
      }
    },
  };
}

interface SandboxInternals {
  core: CoreV1Api;
  networking: NetworkingV1Api;
  kubeConfig: KubeConfig;
  objects: SandboxObjectOptions;
  logger: Logger;
  startTimeoutMs: number;
  pollIntervalMs: number;
  maxRecoveries: number;
  maxOutputBytes: number;
  cpuSeconds: number | undefined;
  spoolDir: string;
  pingIntervalMs: number;
  deathCheckMs: number;
  callGraceMs: number;
}

/** One sandbox pod (and its successors after recovery). A class: it has a lifecycle. */
class KubernetesSandbox implements Sandbox {
  readonly driver = 'kubernetes';
  readonly workdir = POD_WORKDIR;
  readonly #c: SandboxInternals;
  #attempt = 0;
  #recoveries = 0;
  #destroyed = false;
  #policyCreated = false;
  #journal: JournalEntry[] = [];
  #spoolDir: string | undefined;
  /** Serialises recoveries: concurrent calls that all see the pod dead recover once. */
  #recovering: Promise<void> | undefined;

  constructor(internals: SandboxInternals) {
    this.#c = internals;
  }

  get #podName(): string {
    return sandboxPodName(this.#c.objects.name, this.#attempt);
  }

  /** Forget the calls made so far (the probe and `verify`): replay covers the caller's calls only. */
  startJournal(): void {
    this.#journal = [];
  }

  /** NetworkPolicy first, then the pod; waits until it is Running. */
  async start(): Promise<void> {
    const { objects } = this.#c;
    try {
      await this.#c.networking.createNamespacedNetworkPolicy({
        namespace: objects.namespace,
        body: buildSandboxNetworkPolicy(objects),
      });
      this.#policyCreated = true;
    } catch (err) {
      throw refusal(err, 'NetworkPolicy', objects.namespace);
    }
    await this.#startPod();
  }

  /** Re-create the NetworkPolicy if something (the janitor, a person) deleted it: never a pod without it. */
  async #ensurePolicy(): Promise<void> {
    const { objects } = this.#c;
    try {
      await this.#c.networking.createNamespacedNetworkPolicy({
        namespace: objects.namespace,
        body: buildSandboxNetworkPolicy(objects),
      });
    } catch (err) {
      if (apiErrorInfo(err).status !== 409) throw refusal(err, 'NetworkPolicy', objects.namespace);
    }
  }

  async #startPod(): Promise<void> {
    const { objects } = this.#c;
    try {
      await this.#c.core.createNamespacedPod({
        namespace: objects.namespace,
        body: buildSandboxPod(objects, this.#attempt),
      });
    } catch (err) {
      throw refusal(err, 'pod', objects.namespace);
    }
    const deadline = Date.now() + this.#c.startTimeoutMs;
    // Polls start fast (a warm node starts a pod in well under a second) and back off.
    let delay = Math.min(50, this.#c.pollIntervalMs);
    for (;;) {
      let pod: V1Pod;
      try {
        pod = await this.#c.core.readNamespacedPod({ name: this.#podName, namespace: objects.namespace });
      } catch (err) {
        if (isNotFound(err))
          throw new AppError('SANDBOX_UNAVAILABLE', 'the sandbox pod was deleted while starting');
        throw new AppError(
          'SANDBOX_UNAVAILABLE',
          `reading the sandbox pod failed: ${apiErrorInfo(err).message}`,
          {
            retryable: true,
            cause: err,
          },
        );
      }
      const startup = classifyPodStartup(pod, objects.image);
      if (startup.state === 'running') return;
      if (startup.state === 'failed') throw startup.error;
      const detail = startup.detail;
      if (Date.now() >= deadline) {
        throw new AppError(
          'SANDBOX_UNAVAILABLE',
          `the sandbox pod was not Running within ${Math.round(this.#c.startTimeoutMs / 1000)} s (${detail})`,
          { retryable: true, details: { pod: this.#podName } },
        );
      }
      await sleep(delay);
      delay = Math.min(delay * 2, this.#c.pollIntervalMs);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Sandbox interface

  async exec(command: readonly string[] | string, options: ExecOptions = {}): Promise<ExecResult> {
    this.#assertUsable();
    const started = Date.now();
    if (options.signal?.aborted) {
      return emptyResult({ exitCode: null, signal: 'SIGKILL', durationMs: 0 });
    }
    const raw = await this.#withRecovery(
      () => this.#runCommand(command, options),
      (death) =>
        death.reason === 'OOMKilled'
          ? {
              stdout: Buffer.alloc(0),
              stderr: Buffer.from(
                `frognano: the sandbox ran out of memory (OOMKilled, limit ${this.#c.objects.memoryMiB} MiB) ` +
                  'while this command ran; the sandbox was recreated and the earlier changes replayed\n',
              ),
              code: 137,
              state: 'killed' as const,
              outputTruncated: false,
              lostWithPod: true as const,
            }
          : undefined,
    );
    const durationMs = Date.now() - started;
    const result = toExecResult(raw, durationMs);
    // Its effects died with the pod, and running it again would only run out of memory again.
    if (raw.lostWithPod) return result;
    this.#journal.push({
      kind: 'exec',
      command: typeof command === 'string' ? command : [...command],
      options: withoutSignal(options),
      exitCode: result.exitCode,
      timedOut: result.timedOut,
      aborted: raw.state === 'killed',
      durationMs,
    });
    return result;
  }

  async readFile(filePath: string, options: { maxBytes?: number } = {}): Promise<Buffer> {
    this.#assertUsable();
    const abs = this.#absolute(filePath);
    const maxBytes = options.maxBytes ?? Number.MAX_SAFE_INTEGER;
    const raw = await this.#withRecovery(() =>
      this.#runScript(READ_FILE_SCRIPT, [this.workdir, abs, String(maxBytes)], {
        maxOutputBytes: Math.min(maxBytes, Number.MAX_SAFE_INTEGER),
      }),
    );
    throwFileError(raw, abs);
    return raw.stdout;
  }

  async writeFile(
    filePath: string,
    data: Buffer | string,
    options: { mkdirs?: boolean } = {},
  ): Promise<void> {
    this.#assertUsable();
    const abs = this.#absolute(filePath);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
    const mkdirs = options.mkdirs ?? true;
    const raw = await this.#withRecovery(() => this.#writeOnce(abs, bytes, mkdirs));
    throwFileError(raw, abs);
    this.#journal.push({ kind: 'writeFile', path: abs, data: bytes, mkdirs });
  }

  async list(
    dir?: string,
    options: { limit?: number } = {},
  ): Promise<{ files: string[]; truncated: boolean }> {
    this.#assertUsable();
    const abs = this.#absolute(dir ?? this.workdir);
    const limit = options.limit ?? 100_000;
    const raw = await this.#withRecovery(() =>
      this.#runScript(LIST_SCRIPT, [this.workdir, abs, String(limit + 1)]),
    );
    throwFileError(raw, abs);
    const files = raw.stdout
      .toString('utf8')
      .split('\0')
      .filter((f) => f.length > 0)
      .map((f) => (f.startsWith('./') ? f.slice(2) : f));
    return { files: files.slice(0, limit), truncated: files.length > limit };
  }

  async findFiles(dir: string, pattern: PathPattern): Promise<string[]> {
    this.#assertUsable();
    const abs = this.#absolute(dir);
    // find prunes by depth when the pattern has no `any` component; the pattern itself is matched
    // here, on the host, over the uncapped listing (the image has no runtime to match in).
    const maxDepth = pattern.some((c) => c.kind === 'any') ? 0 : pattern.length;
    const raw = await this.#withRecovery(() =>
      this.#runScript(FIND_FILES_SCRIPT, [this.workdir, abs, String(maxDepth)]),
    );
    throwFileError(raw, abs);
    const compiled = compilePathPattern(pattern);
    return raw.stdout
      .toString('utf8')
      .split('\0')
      .filter((f) => f.length > 0)
      .map((f) => (f.startsWith('./') ? f.slice(2) : f))
      .filter((f) => pathMatches(compiled, f));
  }

  async copyIn(tar: Readable, options: { timeoutMs?: number } = {}): Promise<void> {
    this.#assertUsable();
    const timeoutMs = options.timeoutMs ?? KUBERNETES_SANDBOX_DEFAULTS.copyTimeoutMs;
    const entry = await this.#spool(tar, timeoutMs);
    await this.#withRecovery(() => this.#copyOnce(entry));
    this.#journal.push(entry);
  }

  async destroy(): Promise<void> {
    if (this.#destroyed) return;
    this.#destroyed = true;
    const { namespace, name } = this.#c.objects;
    const deletions: Promise<unknown>[] = [
      this.#c.core.deleteNamespacedPod({ name: this.#podName, namespace, gracePeriodSeconds: 0 }),
    ];
    if (this.#policyCreated)
      deletions.push(this.#c.networking.deleteNamespacedNetworkPolicy({ name, namespace }));
    for (const result of await Promise.allSettled(deletions)) {
      if (result.status === 'rejected' && !isNotFound(result.reason)) {
        this.#c.logger.warn(
          { err: apiErrorInfo(result.reason).message },
          'sandbox cleanup failed; the janitor will retry',
        );
      }
    }
    if (this.#spoolDir) await rm(this.#spoolDir, { recursive: true, force: true }).catch(() => undefined);
  }

  // ---------------------------------------------------------------------------------------------
  // Recovery

  async #withRecovery<T>(op: () => Promise<T>, onDeath?: (death: PodDeath) => T | undefined): Promise<T> {
    for (;;) {
      try {
        return await op();
      } catch (err) {
        if (!(err instanceof PodDiedError)) throw err;
        await this.#recover(err.death);
        const substitute = onDeath?.(err.death);
        if (substitute !== undefined) return substitute;
      }
    }
  }

  async #recover(death: PodDeath): Promise<void> {
    if (this.#recovering) return this.#recovering;
    this.#recovering = this.#recoverNow(death).finally(() => {
      this.#recovering = undefined;
    });
    return this.#recovering;
  }

  async #recoverNow(firstDeath: PodDeath): Promise<void> {
    let death = firstDeath;
    for (;;) {
      if (this.#destroyed) throw gone('the sandbox was destroyed');
      if (death.reason === 'DeadlineExceeded') {
        throw gone(
          `the sandbox pod reached its activeDeadlineSeconds (${this.#c.objects.activeDeadlineSeconds} s)`,
        );
      }
      if (this.#recoveries >= this.#c.maxRecoveries) {
        throw gone(
          `the sandbox pod died ${this.#recoveries + 1} times (last: ${death.reason}: ${death.message}); ` +
            `it is recreated at most ${this.#c.maxRecoveries} times`,
          death,
        );
      }
      this.#recoveries += 1;
      this.#c.logger.warn(
        {
          reason: death.reason,
          message: death.message,
          recovery: this.#recoveries,
          calls: this.#journal.length,
        },
        'sandbox pod died; recreating it and replaying the recorded calls',
      );
      const { namespace } = this.#c.objects;
      await this.#c.core
        .deleteNamespacedPod({ name: this.#podName, namespace, gracePeriodSeconds: 0 })
        .catch(() => undefined);
      this.#attempt += 1;
      try {
        await this.#ensurePolicy();
        await this.#startPod();
        await this.#replay();
        return;
      } catch (err) {
        if (err instanceof PodDiedError) {
          death = err.death;
          continue;
        }
        throw err;
      }
    }
  }

  async #replay(): Promise<void> {
    for (const [index, entry] of this.#journal.entries()) {
      if (entry.kind === 'copyIn') {
        await this.#copyOnce(entry);
      } else if (entry.kind === 'writeFile') {
        const raw = await this.#writeOnce(entry.path, entry.data, entry.mkdirs);
        if (raw.code !== 0)
          throw gone(`replaying call ${index + 1} (writeFile ${entry.path}) failed after recovery`);
      } else {
        const options = entry.aborted
          ? { ...entry.options, timeoutMs: Math.max(1, entry.durationMs) }
          : entry.options;
        const result = toExecResult(await this.#runCommand(entry.command, options), 0);
        if (!entry.aborted && (result.exitCode !== entry.exitCode || result.timedOut !== entry.timedOut)) {
          throw gone(
            `replaying call ${index + 1} (exec) after recovery gave a different outcome: exit ${describeExit(result.exitCode, result.timedOut)} ` +
              `instead of ${describeExit(entry.exitCode, entry.timedOut)}`,
          );
        }
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Calls

  #assertUsable(): void {
    if (this.#destroyed) throw gone('the sandbox was destroyed');
  }

  #absolute(p: string): string {
    return path.posix.resolve(this.workdir, p);
  }

  async #runCommand(
    command: readonly string[] | string,
    options: Omit<ExecOptions, 'signal'> & { signal?: AbortSignal },
  ): Promise<RawResult> {
    const env: Record<string, string> = { ...BASE_ENV };
    for (const [key, value] of Object.entries(options.env ?? {})) {
      if (!ENV_NAME.test(key))
        throw new AppError('SANDBOX_EXEC_FAILED', `invalid environment variable name "${key}"`);
      env[key] = value;
    }
    const envArgs = ['env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`)];
    let argv: string[];
    let script: Buffer | undefined;
    let program = 'bash';
    if (typeof command === 'string') {
      const bytes = Buffer.from(command, 'utf8');
      if (bytes.length > KUBERNETES_SANDBOX_DEFAULTS.maxArgvScriptBytes) {
        script = bytes;
        argv = [...envArgs, 'bash'];
      } else argv = [...envArgs, 'bash', '-c', command];
    } else {
      if (command.length === 0 || !command[0]) throw new AppError('SANDBOX_EXEC_FAILED', 'empty command');
      // `env` would take a first word with "=" for an assignment.
      if (command[0].includes('='))
        throw new AppError('SANDBOX_EXEC_FAILED', `cannot run a program named "${command[0]}"`);
      program = command[0];
      argv = [...envArgs, ...command];
    }
    const stdin = options.stdin === undefined ? undefined : Buffer.from(options.stdin);
    return this.#wrapped(argv, {
      timeoutMs: options.timeoutMs,
      cwd: options.cwd === undefined ? this.workdir : this.#absolute(options.cwd),
      script,
      stdin,
      maxOutputBytes: options.maxOutputBytes ?? this.#c.maxOutputBytes,
      signal: options.signal,
      cpuSeconds: this.#c.cpuSeconds,
      program,
    });
  }

  async #runScript(
    script: string,
    args: string[],
    options: { stdin?: Buffer; maxOutputBytes?: number } = {},
  ): Promise<RawResult> {
    return this.#wrapped(
      ['env', '-i', `PATH=${BASE_ENV.PATH}`, 'LC_ALL=C.UTF-8', 'sh', '-c', script, 'frognano', ...args],
      {
        cwd: '/',
        program: 'sh',
        stdin: options.stdin,
        maxOutputBytes: options.maxOutputBytes ?? this.#c.maxOutputBytes,
        // File operations have a deadline too (plus the grace): a stuck one fails as EIO.
        timeoutMs: FILE_SCRIPT_TIMEOUT_MS,
      },
    );
  }

  async #writeOnce(abs: string, data: Buffer, mkdirs: boolean): Promise<RawResult> {
    return this.#runScript(WRITE_FILE_SCRIPT, [this.workdir, abs, mkdirs ? '1' : '0'], { stdin: data });
  }

  async #copyOnce(entry: Extract<JournalEntry, { kind: 'copyIn' }>): Promise<void> {
    let raw: RawResult;
    try {
      raw = await this.#wrapped(
        [
          'env',
          '-i',
          `PATH=${BASE_ENV.PATH}`,
          `TMPDIR=${POD_TMPDIR}`,
          'sh',
          '-c',
          COPY_IN_SCRIPT,
          'frognano',
          this.workdir,
          String(entry.size),
          entry.sha256,
        ],
        {
          cwd: '/',
          program: 'sh',
          timeoutMs: entry.timeoutMs,
          stdinStream: { bytes: entry.size, open: () => createReadStream(entry.spool) },
          maxOutputBytes: 64 * 1024,
        },
      );
    } catch (err) {
      if (isAppError(err, 'SANDBOX_EXEC_FAILED')) {
        throw new AppError(
          'SANDBOX_COPY_FAILED',
          `the copy into the sandbox did not arrive whole: ${err.message}`,
          { cause: err },
        );
      }
      throw err;
    }
    if (raw.state === 'timeout') {
      throw new AppError(
        'SANDBOX_COPY_FAILED',
        `the copy into the sandbox did not finish within ${entry.timeoutMs} ms`,
        {
          retryable: true,
        },
      );
    }
    if (raw.code !== 0) {
      throw new AppError(
        'SANDBOX_COPY_FAILED',
        `the copy into the sandbox failed (exit ${raw.code}): ${raw.stderr.toString('utf8').trim().slice(0, 1000)}`,
        { details: { size: entry.size, sha256: entry.sha256 } },
      );
    }
  }

  /**
   * Copy the archive to a worker-side file while counting, hashing and checking it: entries must
   * stay inside the workspace (no absolute names, no `..`, no path through a symlink of the same
   * archive, no hard link leaving it, no device files). Throws `SANDBOX_COPY_FAILED`.
   */
  async #spool(tar: Readable, timeoutMs: number): Promise<Extract<JournalEntry, { kind: 'copyIn' }>> {
    this.#spoolDir ??= await mkdtemp(path.join(this.#c.spoolDir, 'frognano-copy-'));
    const spool = path.join(this.#spoolDir, `${this.#journal.length}.tar`);
    const hash = createHash('sha256');
    let size = 0;
    const checker = createTarChecker();
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        size += chunk.length;
        checker.write(chunk).then(
          () => cb(null, chunk),
          (err: unknown) => cb(err as Error),
        );
      },
      flush(cb) {
        checker.end().then(
          () => cb(),
          (err: unknown) => cb(err as Error),
        );
      },
    });
    const abort = AbortSignal.timeout(timeoutMs);
    try {
      await pipeline(tar, counter, createWriteStream(spool), { signal: abort });
    } catch (err) {
      await rm(spool, { force: true });
      throw new AppError(
        'SANDBOX_COPY_FAILED',
        abort.aborted
          ? `reading the archive did not finish within ${timeoutMs} ms`
          : `the archive was refused: ${(err as Error).message}`,
        { cause: err },
      );
    }
    return { kind: 'copyIn', spool, size, sha256: hash.digest('hex'), timeoutMs };
  }

  /**
   * Run argv through {@link EXEC_WRAPPER} and check the trailers and the status. Throws
   * {@link PodDiedError} when the pod is gone, `SANDBOX_EXEC_FAILED` when the stream was cut or the
   * command could not start.
   */
  async #wrapped(
    argv: string[],
    o: {
      cwd: string;
      timeoutMs?: number;
      script?: Buffer;
      stdin?: Buffer;
      stdinStream?: { bytes: number; open: () => Readable };
      maxOutputBytes: number;
      signal?: AbortSignal;
      cpuSeconds?: number;
      /** The program argv runs after `env -i …` (checked to exist before the command starts). */
      program: string;
    },
  ): Promise<RawResult> {
    const nonce = newNonce();
    const timeoutMs = o.timeoutMs === undefined ? 0 : Math.max(1, Math.ceil(o.timeoutMs));
    const stdinBytes = o.stdinStream ? o.stdinStream.bytes : (o.stdin?.length ?? 0);
    const command = [
      '/bin/sh',
      '-c',
      EXEC_WRAPPER,
      'frognano-exec',
      nonce,
      String(timeoutMs),
      String(o.script?.length ?? 0),
      String(stdinBytes),
      o.stdinStream ? 'pipe' : 'file',
      o.cwd,
      String(o.cpuSeconds ? Math.ceil(o.cpuSeconds) : 0),
      o.program,
      ...argv,
    ];
    const buffers = [o.script, o.stdin].filter((b): b is Buffer => b !== undefined && b.length > 0);
    // Cancelling never waits on the pod: after the kill, the call has the grace to end.
    const cancel = new AbortController();
    let cancelTimer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      void this.#kill(nonce);
      cancelTimer = setTimeout(() => cancel.abort(), Math.min(this.#c.callGraceMs, 5_000));
    };
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const started = Date.now();
    let response: PodExecResponse;
    try {
      response = await execInPod({
        kubeConfig: this.#c.kubeConfig,
        namespace: this.#c.objects.namespace,
        pod: this.#podName,
        container: SANDBOX_CONTAINER,
        command,
        stdin: { buffers, stream: o.stdinStream?.open() },
        // Room for the wrapper's preamble on stdout (see #interpret).
        maxOutputBytes: o.maxOutputBytes + PREAMBLE_ROOM,
        pingIntervalMs: this.#c.pingIntervalMs,
        // The wrapper's watchdog ends the command at its timeout; nothing the pod does may make
        // the worker wait longer than the grace after that.
        hardTimeoutMs:
          timeoutMs > 0
            ? timeoutMs + this.#c.callGraceMs
            : (this.#c.objects.activeDeadlineSeconds + 60) * 1000,
        cancel: cancel.signal,
      });
    } catch (err) {
      if (err instanceof PodExecError && err.phase === 'deadline') {
        this.#c.logger.warn({ pod: this.#podName, err: err.message }, 'sandbox protocol violation');
        await this.destroy();
        throw new AppError(
          'SANDBOX_PROTOCOL_VIOLATION',
          `the sandbox broke its protocol: ${err.message} (timeout ${timeoutMs} ms, grace ${this.#c.callGraceMs} ms)`,
          { retryable: false, cause: err },
        );
      }
      if (err instanceof PodExecError) {
        const death = await this.#deathAfterBreak();
        if (death) throw new PodDiedError(death);
        throw new AppError(
          'SANDBOX_EXEC_FAILED',
          err.phase === 'connect'
            ? `the command could not be started: ${err.message}`
            : `the command's output stream was cut short: ${err.message}`,
          { retryable: true, cause: err, details: { pod: this.#podName } },
        );
      }
      throw err;
    } finally {
      clearTimeout(cancelTimer);
      o.signal?.removeEventListener('abort', onAbort);
    }
    return this.#interpret(response, nonce, {
      maxOutputBytes: o.maxOutputBytes,
      timedOut: timeoutMs > 0 && Date.now() - started >= timeoutMs,
      aborted: o.signal?.aborted === true,
    });
  }

  /**
   * Read the result: the exit code only from the exec status (channel 3), the start state only from
   * the wrapper's preamble (written before the command existed), the output unparsed. A SIGKILL
   * status (137) is a timeout when the call's timeout had passed, a kill when it was aborted.
   */
  async #interpret(
    response: PodExecResponse,
    nonce: string,
    o: { maxOutputBytes: number; timedOut: boolean; aborted: boolean },
  ): Promise<RawResult> {
    const head = response.stdout.head(PREAMBLE_ROOM).toString('latin1');
    const preamble = new RegExp(`^${nonce} (start|cwd|nostart|stdin)\n`).exec(head);
    const code = response.status ? exitCodeFromStatus(response.status) : null;
    if (!preamble || code === null) {
      const death = await this.#deathAfterBreak();
      if (death) throw new PodDiedError(death);
      const why = response.status?.message ? ` (status: ${response.status.message})` : '';
      throw new AppError(
        'SANDBOX_EXEC_FAILED',
        preamble
          ? `the exec status carries no exit code${why}`
          : `the command's output stream did not start with the wrapper's preamble${why}`,
        { retryable: true, details: { pod: this.#podName } },
      );
    }
    const state = preamble[1]!;
    if (state === 'cwd')
      throw new AppError('SANDBOX_EXEC_FAILED', 'the command could not start: no such working directory');
    if (state === 'nostart')
      throw new AppError('SANDBOX_EXEC_FAILED', 'the command could not start: no such program');
    if (state === 'stdin')
      throw new AppError('SANDBOX_EXEC_FAILED', 'the command could not start: its stdin arrived short');
    const skip = preamble[0].length;
    const outLength = response.stdout.total - skip;
    const stdout = Buffer.from(response.stdout.head(skip + o.maxOutputBytes).subarray(skip));
    const stderr = Buffer.from(response.stderr.head(o.maxOutputBytes));
    const killed = code === 128 + 9;
    return {
      stdout,
      stderr,
      code,
      state: killed && o.timedOut ? 'timeout' : killed && o.aborted ? 'killed' : 'exit',
      outputTruncated: stdout.length < outLength || stderr.length < response.stderr.total,
    };
  }

  /** Kill the process group of call `nonce` (abort). Best effort. */
  async #kill(nonce: string): Promise<void> {
    try {
      await execInPod({
        kubeConfig: this.#c.kubeConfig,
        namespace: this.#c.objects.namespace,
        pod: this.#podName,
        container: SANDBOX_CONTAINER,
        command: ['/bin/sh', '-c', KILL_SCRIPT, 'frognano-kill', nonce],
        maxOutputBytes: 4096,
        hardTimeoutMs: 30_000,
      });
    } catch (err) {
      this.#c.logger.warn({ err: (err as Error).message }, 'killing an aborted command failed');
    }
  }

  /**
   * {@link #deathOf}, re-read for up to `deathCheckMs` while the pod still looks alive: a broken
   * exec stream usually means the pod died, and its status may say so only a moment later.
   */
  async #deathAfterBreak(): Promise<PodDeath | null> {
    const deadline = Date.now() + this.#c.deathCheckMs;
    let delay = 50;
    for (;;) {
      const death = await this.#deathOf();
      if (death || this.#destroyed || Date.now() >= deadline) return death;
      await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
      delay = Math.min(delay * 2, 1000);
    }
  }

  /** Why the current pod is dead, or null when it is alive (or its state cannot be read). */
  async #deathOf(): Promise<PodDeath | null> {
    try {
      const pod = await this.#c.core.readNamespacedPod({
        name: this.#podName,
        namespace: this.#c.objects.namespace,
      });
      return podDeath(pod);
    } catch (err) {
      if (isNotFound(err)) return podDeath(null);
      return null;
    }
  }
}

/**
 * The result the Sandbox contract wants. The in-pod shell only sees a wait status, where death by
 * signal n reads as 128 + n; such statuses are reported as the signal (as shells report them), so
 * a command that itself exits with 129…192 is reported as signalled.
 */
function toExecResult(raw: RawResult, durationMs: number): ExecResult {
  const killed = raw.state !== 'exit';
  const signal = killed ? 'SIGKILL' : signalName(raw.code);
  return {
    stdout: raw.stdout,
    stderr: raw.stderr,
    exitCode: signal ? null : raw.code,
    signal,
    timedOut: raw.state === 'timeout',
    outputTruncated: raw.outputTruncated,
    durationMs,
  };
}

function emptyResult(r: Pick<ExecResult, 'exitCode' | 'signal' | 'durationMs'>): ExecResult {
  return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), timedOut: false, outputTruncated: false, ...r };
}

function signalName(status: number): NodeJS.Signals | null {
  if (status <= 128 || status > 128 + 64) return null;
  const entry = Object.entries(osConstants.signals).find(([, n]) => n === status - 128);
  return entry ? (entry[0] as NodeJS.Signals) : null;
}

function withoutSignal(options: ExecOptions): Omit<ExecOptions, 'signal'> {
  const { signal: _signal, ...rest } = options;
  return rest;
}

function describeExit(exitCode: number | null, timedOut: boolean): string {
  return timedOut ? 'timeout' : exitCode === null ? 'killed' : String(exitCode);
}

function throwFileError(raw: RawResult, abs: string): void {
  if (raw.code === 0 && raw.state === 'exit') return;
  const lines = raw.stderr.toString('utf8').trim().split('\n');
  const errno = raw.code === FILE_ERROR_EXIT ? (lines[lines.length - 1] ?? 'EIO') : 'EIO';
  throw new SandboxFileError(
    errno,
    abs,
    `${errno}: ${abs}${raw.code === FILE_ERROR_EXIT ? '' : ` (${lines.join(' ').slice(0, 300)})`}`,
  );
}

function gone(message: string, death?: PodDeath): AppError {
  return new AppError('SANDBOX_GONE', message, {
    retryable: true,
    details: death ? { reason: death.reason } : undefined,
  });
}

/** The error for a refused create of the policy or the pod, with the fix. */
function refusal(err: unknown, what: string, namespace: string): AppError {
  const info = apiErrorInfo(err);
  if (info.status === 403 && /exceeded quota/i.test(info.message)) {
    return new AppError(
      'SANDBOX_UNAVAILABLE',
      `the ResourceQuota of namespace ${namespace} refused the sandbox ${what}: ${info.message}; ` +
        'fix: wait for running jobs to end, lower WORKER_CONCURRENCY, or raise the quota',
      { retryable: true, cause: err, details: { status: 403, reason: 'ExceededQuota' } },
    );
  }
  if (info.status === 403 || info.status === 401) {
    return new AppError(
      'SANDBOX_UNAVAILABLE',
      `the worker may not create the sandbox ${what} in namespace ${namespace} (HTTP ${info.status}): ${info.message}; ` +
        'fix: apply deploy/base/rbac.yaml (Role frognano-sandbox-driver bound to the worker\u2019s ServiceAccount)',
      { cause: err, details: { status: info.status } },
    );
  }
  if (info.status === 404) {
    return new AppError(
      'SANDBOX_UNAVAILABLE',
      `namespace ${namespace} does not exist (creating the sandbox ${what}): ${info.message}`,
      {
        cause: err,
        details: { status: 404 },
      },
    );
  }
  return new AppError(
    'SANDBOX_UNAVAILABLE',
    `creating the sandbox ${what} failed${info.status ? ` (HTTP ${info.status})` : ''}: ${info.message}`,
    { retryable: isRetryableHttpStatus(info.status), cause: err },
  );
}

/**
 * Parses a tar stream (tar-stream) as it passes and rejects entries that would land outside the
 * workspace. `write` resolves once the parser took the chunk; `end` once the archive ended well.
 */
function createTarChecker(): { write: (chunk: Buffer) => Promise<void>; end: () => Promise<void> } {
  const extract = tarStream.extract();
  const symlinks = new Set<string>();
  let failure: Error | undefined;
  const finished = new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve);
    extract.on('error', (err) => reject(failure ?? err));
  });
  finished.catch(() => undefined);
  const refuse = (why: string): Error => {
    failure ??= new Error(why);
    return failure;
  };
  extract.on('entry', (header, stream, next) => {
    const name = header.name.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
    const parts = name.split('/').filter((p) => p !== '' && p !== '.');
    let problem: string | undefined;
    if (header.name.startsWith('/')) problem = `absolute entry name "${header.name}"`;
    else if (parts.includes('..')) problem = `entry name with "..": "${header.name}"`;
    else if (parts.some((_, i) => symlinks.has(parts.slice(0, i).join('/')) && i > 0)) {
      problem = `entry "${header.name}" goes through a symlink of the archive`;
    } else if (header.type === 'link' && (header.linkname ?? '').split('/').includes('..')) {
      problem = `hard link "${header.name}" leaves the workspace`;
    } else if (header.type === 'link' && (header.linkname ?? '').startsWith('/')) {
      problem = `hard link "${header.name}" has an absolute target`;
    } else if (['character-device', 'block-device', 'fifo'].includes(header.type ?? '')) {
      problem = `entry "${header.name}" is a ${header.type}`;
    }
    if (header.type === 'symlink') symlinks.add(parts.join('/'));
    if (problem) refuse(problem);
    stream.on('end', () => next());
    stream.resume();
  });
  return {
    write: async (chunk) => {
      if (failure) throw failure;
      // streamx: write() returns false when the parser wants a pause until 'drain'.
      if (!extract.write(chunk)) {
        await new Promise<void>((resolve, reject) => {
          const onDrain = (): void => {
            extract.off('error', onError);
            resolve();
          };
          const onError = (err: Error): void => {
            extract.off('drain', onDrain);
            reject(failure ?? err);
          };
          extract.once('drain', onDrain);
          extract.once('error', onError);
        });
      }
      if (failure) throw failure;
    },
    end: async () => {
      if (failure) throw failure;
      // The typings (Writable from node:stream) want a chunk; streamx's end() takes none.
      (extract as unknown as { end: () => void }).end();
      await finished;
      if (failure) throw failure;
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
