import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Readable } from 'node:stream';
import { CoreV1Api, NetworkingV1Api } from '@kubernetes/client-node';
import tarStream from 'tar-stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import {
  createKubernetesSandboxFactory,
  type KubernetesSandboxFactoryOptions,
} from '../../../src/sandbox/kubernetes/kubernetes-sandbox.js';
import { createSandboxJanitor } from '../../../src/sandbox/kubernetes/sandbox-janitor.js';
import {
  buildSandboxNetworkPolicy,
  buildSandboxPod,
  sandboxName,
  type SandboxObjectOptions,
} from '../../../src/sandbox/kubernetes/sandbox-objects.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';
import { startKubeStandin, type KubeStandin } from '../../helpers/kube-standin/kube-standin.js';

const NS = 'sandboxes';

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

async function tarOf(files: Record<string, string | Buffer>): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const [name, content] of Object.entries(files)) pack.entry({ name, mode: 0o644 }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('kubernetes sandbox driver (API stand-in)', () => {
  let standin: KubeStandin;
  const sandboxes: Sandbox[] = [];

  const factory = (extra: Partial<KubernetesSandboxFactoryOptions> = {}) =>
    createKubernetesSandboxFactory({
      kubeConfig: standin.kubeConfig(),
      namespace: NS,
      image: 'frognano-sandbox:test',
      pollIntervalMs: 10,
      deathCheckMs: 300,
      ...extra,
    });
  const create = async (
    jobId: string,
    extra: Partial<KubernetesSandboxFactoryOptions> = {},
  ): Promise<Sandbox> => {
    const sb = await factory(extra).create({ jobId });
    sandboxes.push(sb);
    return sb;
  };
  /** The one pod of a job that currently exists. */
  const podOf = (prefix: string): string => {
    const names = standin.podNames(NS).filter((n) => n.startsWith(`fn-sbx-${prefix}-`));
    expect(names, `pods of ${prefix}`).toHaveLength(1);
    return names[0]!;
  };

  beforeAll(async () => {
    standin = await startKubeStandin({ namespaces: [NS] });
  });
  afterEach(async () => {
    Object.assign(standin.faults, {
      imagePull: false,
      unschedulable: false,
      quotaExceeded: false,
      cutNextExecAfterBytes: null,
      corruptNextStdinOfAtLeast: null,
      startDelayMs: 0,
      closeIdleExecAfterMs: null,
    });
    for (const sb of sandboxes.splice(0)) await sb.destroy();
  });
  afterAll(async () => {
    await standin.close();
  });

  describe('create', () => {
    it('creates the deny-all NetworkPolicy before the pod, and removes both on destroy', async () => {
      standin.requests.length = 0;
      const sb = await create('order');
      const creates = standin.requests.filter((r) => r.startsWith('POST /api') && !r.includes('selfsubject'));
      expect(creates).toEqual([
        `POST /apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`,
        `POST /api/v1/namespaces/${NS}/pods`,
      ]);
      const pod = podOf('order');
      expect(standin.policyNames(NS)).toContain(pod.replace(/-0$/, ''));
      // The stand-in gave the pod no network because the policy selects it.
      const probe = await sb.exec('cat /proc/net/dev | grep -c : ', { timeoutMs: 10_000 });
      expect(probe.stdout.toString().trim()).toBe('1'); // only "lo"
      await sb.destroy();
      expect(standin.podNames(NS).filter((n) => n.startsWith('fn-sbx-order-'))).toEqual([]);
      expect(standin.policyNames(NS).filter((n) => n.startsWith('fn-sbx-order-'))).toEqual([]);
    });

    it('reports an image that cannot be pulled, and leaves nothing behind', async () => {
      standin.faults.imagePull = true;
      const err = await rejection(factory().create({ jobId: 'pull' }));
      expect(err.code).toBe('SANDBOX_UNAVAILABLE');
      expect(err.message).toMatch(
        /image "frognano-sandbox:test" cannot be pulled \((ErrImagePull|ImagePullBackOff)/,
      );
      expect(err.retryable).toBe(false);
      expect(standin.podNames(NS).filter((n) => n.includes('-pull-'))).toEqual([]);
      expect(standin.policyNames(NS).filter((n) => n.includes('-pull-'))).toEqual([]);
    });

    it('reports a pod that cannot be scheduled (retryable)', async () => {
      standin.faults.unschedulable = true;
      const err = await rejection(factory().create({ jobId: 'unsched' }));
      expect(err.code).toBe('SANDBOX_UNAVAILABLE');
      expect(err.message).toContain('cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu');
      expect(err.retryable).toBe(true);
      expect(standin.podNames(NS).filter((n) => n.includes('-unsched-'))).toEqual([]);
    });

    it('reports a ResourceQuota refusal (retryable)', async () => {
      standin.faults.quotaExceeded = true;
      const err = await rejection(factory().create({ jobId: 'quota' }));
      expect(err.code).toBe('SANDBOX_UNAVAILABLE');
      expect(err.message).toMatch(
        /ResourceQuota of namespace sandboxes refused the sandbox pod: .*exceeded quota/,
      );
      expect(err.retryable).toBe(true);
      expect(standin.policyNames(NS).filter((n) => n.includes('-quota-'))).toEqual([]);
    });

    it('reports a pod that is not Running in time', async () => {
      standin.faults.startDelayMs = 60_000;
      const err = await rejection(factory({ startTimeoutMs: 200 }).create({ jobId: 'slow' }));
      expect(err.code).toBe('SANDBOX_UNAVAILABLE');
      expect(err.message).toMatch(/not Running within 0 s \(Pending, ContainerCreating\)/);
    });

    it('reports a missing namespace', async () => {
      const err = await rejection(
        createKubernetesSandboxFactory({
          kubeConfig: standin.kubeConfig(),
          namespace: 'nope',
          image: 'x',
          pollIntervalMs: 10,
        }).create({
          jobId: 'ns',
        }),
      );
      expect(err.message).toContain('namespace nope does not exist');
    });

    it('refuses a sandbox that can reach out (a CNI ignoring NetworkPolicy) with EGRESS_NOT_BLOCKED', async () => {
      const leaky = await startKubeStandin({ namespaces: [NS], ignoreNetworkPolicy: true });
      const server = net.createServer((s) => {
        s.on('error', () => undefined); // the probe's connection is reset when it is killed
        s.end('hi\n');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const target = {
        name: 'model-server',
        url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1`,
      };
      try {
        const make = (kubeConfig = leaky.kubeConfig()) =>
          createKubernetesSandboxFactory({
            kubeConfig,
            namespace: NS,
            image: 'img',
            pollIntervalMs: 10,
            egressProbeTargets: [target],
            egressProbeTimeoutMs: 3000,
          });
        const err = await rejection(make().create({ jobId: 'leak' }));
        expect(err.code).toBe('EGRESS_NOT_BLOCKED');
        expect(err.message).toContain('this cluster does not enforce NetworkPolicy');
        expect(err.message).toContain('model-server');
        expect(leaky.podNames(NS)).toEqual([]);
        expect(leaky.policyNames(NS)).toEqual([]);
        // The same probe passes where the policy is enforced.
        const ok = await make(standin.kubeConfig()).create({ jobId: 'noleak' });
        sandboxes.push(ok);
      } finally {
        await new Promise((resolve) => server.close(resolve));
        await leaky.close();
      }
    });
  });

  describe('exec', () => {
    it('takes exit codes from the status channel and stdout/stderr apart', async () => {
      const sb = await create('codes');
      const r = await sb.exec('printf out; printf err >&2; exit 3', { timeoutMs: 10_000 });
      expect([r.stdout.toString(), r.stderr.toString(), r.exitCode]).toEqual(['out', 'err', 3]);
    });

    it('detects a stream cut short as SANDBOX_EXEC_FAILED, never as success', async () => {
      const sb = await create('cut');
      standin.faults.cutNextExecAfterBytes = 1000;
      const err = await rejection(sb.exec("head -c 100000 /dev/zero | tr '\\0' x", { timeoutMs: 10_000 }));
      expect(err.code).toBe('SANDBOX_EXEC_FAILED');
      expect(err.message).toMatch(/cut short/);
      // The pod is alive: no recovery happened, and the next call works.
      const r = await sb.exec('echo fine', { timeoutMs: 10_000 });
      expect(r.stdout.toString()).toBe('fine\n');
      expect(standin.podNames(NS).filter((n) => n.startsWith('fn-sbx-cut-'))).toEqual([
        expect.stringMatching(/-0$/),
      ]);
    });

    it('kills the process inside the pod on timeout even when the exec socket is gone', async () => {
      const sb = await create('kill');
      const tag = 7000 + Math.floor(Math.random() * 1000);
      // The socket is cut right away, so only the in-pod watchdog can end the command.
      standin.faults.cutNextExecAfterBytes = 0;
      const err = await rejection(sb.exec(`echo x; sleep ${tag}`, { timeoutMs: 300 }));
      expect(err.code).toBe('SANDBOX_EXEC_FAILED');
      const count = async (): Promise<string> =>
        (
          await sb.exec(
            `for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < "$f"; echo; done | grep -c "^sleep ${tag}" || true`,
            {
              timeoutMs: 10_000,
            },
          )
        ).stdout
          .toString()
          .trim();
      // Bounded wait for the watchdog (timeout 300 ms).
      let left = await count();
      for (let i = 0; i < 50 && left !== '0'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        left = await count();
      }
      expect(left).toBe('0');
    });

    it("finishes a command that prints nothing for longer than a proxy's idle timeout (pings)", async () => {
      standin.faults.closeIdleExecAfterMs = 400;
      const pinging = await create('silent', { execPingIntervalMs: 100 });
      const r = await pinging.exec('sleep 1.2; echo done', { timeoutMs: 20_000 });
      expect([r.exitCode, r.stdout.toString()]).toEqual([0, 'done\n']);
      // Without pings the same proxy cuts it, and that is reported, not taken for a result.
      const silent = await create('nopings', { execPingIntervalMs: 60_000 });
      const err = await rejection(silent.exec('sleep 1.2; echo done', { timeoutMs: 20_000 }));
      expect(err.code).toBe('SANDBOX_EXEC_FAILED');
    });

    it('sends long scripts over stdin rather than the exec URL', async () => {
      const sb = await create('long');
      const script = `x='${'a'.repeat(20_000)}'; echo \${#x}`;
      const r = await sb.exec(script, { timeoutMs: 10_000, stdin: 'in' });
      expect(r.stdout.toString()).toBe('20000\n');
    });
  });

  describe('copyIn', () => {
    it('copies a large repository whole (size and sha256 checked in the pod)', async () => {
      const sb = await create('big');
      const big = randomBytes(24 * 1024 * 1024);
      const tar = await tarOf({ 'repo/blob.bin': big, 'repo/README.md': 'hello\n' });
      await sb.copyIn(Readable.from([tar]), { timeoutMs: 60_000 });
      const r = await sb.exec('sha256sum repo/blob.bin | cut -c1-64; cat repo/README.md', {
        timeoutMs: 20_000,
      });
      const { createHash } = await import('node:crypto');
      expect(r.stdout.toString()).toBe(`${createHash('sha256').update(big).digest('hex')}\nhello\n`);
    });

    it('refuses a copy whose hash does not match and leaves the workspace empty', async () => {
      const sb = await create('hash');
      standin.faults.corruptNextStdinOfAtLeast = 1;
      const tar = await tarOf({ 'a.txt': 'a'.repeat(5000) });
      const err = await rejection(sb.copyIn(Readable.from([tar]), { timeoutMs: 20_000 }));
      expect(err.code).toBe('SANDBOX_COPY_FAILED');
      expect(err.message).toMatch(/sha256 mismatch: expected [0-9a-f]{64}, received [0-9a-f]{64}/);
      expect((await sb.list()).files).toEqual([]);
    });

    it('times out a copy that does not arrive', async () => {
      const sb = await create('slowcopy');
      const never = new Readable({ read() {} });
      const err = await rejection(sb.copyIn(never, { timeoutMs: 200 }));
      expect(err.code).toBe('SANDBOX_COPY_FAILED');
      expect(err.message).toContain('did not finish within 200 ms');
    });
  });

  describe('recovery', () => {
    const seed = async (sb: Sandbox): Promise<void> => {
      await sb.copyIn(Readable.from([await tarOf({ 'a.txt': 'from copy\n' })]), { timeoutMs: 20_000 });
      await sb.writeFile('b.txt', 'from writeFile\n');
      const r = await sb.exec('echo from exec >> c.txt; test -e missing', { timeoutMs: 10_000 });
      expect(r.exitCode).toBe(1);
    };
    const state = async (sb: Sandbox): Promise<string> =>
      (await sb.exec('cat a.txt b.txt c.txt', { timeoutMs: 10_000 })).stdout.toString();

    it('recreates a pod deleted between calls and replays copyIn, writeFile and exec', async () => {
      const sb = await create('deleted');
      await seed(sb);
      await standin.killPod(NS, podOf('deleted'), 'Deleted');
      expect(await state(sb)).toBe('from copy\nfrom writeFile\nfrom exec\n');
      expect(podOf('deleted')).toMatch(/-1$/);
    });

    it('recovers a pod deleted during an exec and runs that exec again', async () => {
      const sb = await create('midexec');
      await seed(sb);
      const seen = standin.nextExec('sleep 0.3');
      const pending = sb.exec('sleep 0.3; echo again >> d.txt; cat d.txt', { timeoutMs: 10_000 });
      await seen;
      await standin.killPod(NS, podOf('midexec'), 'Deleted');
      const r = await pending;
      expect([r.exitCode, r.stdout.toString()]).toEqual([0, 'again\n']);
      expect(await state(sb)).toBe('from copy\nfrom writeFile\nfrom exec\n');
    });

    it('recreates the NetworkPolicy too when it was deleted with the pod', async () => {
      const sb = await create('nopolicy');
      await seed(sb);
      const pod = podOf('nopolicy');
      const policy = pod.replace(/-0$/, '');
      await standin
        .kubeConfig()
        .makeApiClient(NetworkingV1Api)
        .deleteNamespacedNetworkPolicy({ name: policy, namespace: NS });
      await standin.killPod(NS, pod, 'Deleted');
      expect(await state(sb)).toBe('from copy\nfrom writeFile\nfrom exec\n');
      expect(standin.policyNames(NS)).toContain(policy);
      // …and the new pod was created behind it: no network.
      expect((await sb.exec('grep -c : /proc/net/dev', { timeoutMs: 10_000 })).stdout.toString()).toBe('1\n');
    });

    it('recovers an evicted pod', async () => {
      const sb = await create('evicted');
      await seed(sb);
      await standin.killPod(NS, podOf('evicted'), 'Evicted');
      expect(await state(sb)).toBe('from copy\nfrom writeFile\nfrom exec\n');
    });

    it('reports OOMKilled for the exec that ran out of memory, recovers, and does not run it again', async () => {
      const sb = await create('oom', { memoryMiB: 256 });
      await seed(sb);
      const seen = standin.nextExec('memory-hog');
      const pending = sb.exec('echo memory-hog >> hog.txt; sleep 5', { timeoutMs: 10_000 });
      await seen;
      await standin.killPod(NS, podOf('oom'), 'OOMKilled');
      const r = await pending;
      expect(r.exitCode).toBeNull();
      expect(r.signal).toBe('SIGKILL');
      expect(r.stderr.toString()).toContain('OOMKilled, limit 256 MiB');
      expect(await state(sb)).toBe('from copy\nfrom writeFile\nfrom exec\n');
      expect((await sb.exec('cat hog.txt', { timeoutMs: 10_000 })).exitCode).toBe(1);
    });

    it('gives up with SANDBOX_GONE after two recoveries', async () => {
      const sb = await create('thrice');
      await sb.writeFile('x.txt', 'x');
      for (let i = 0; i < 2; i++) {
        await standin.killPod(NS, podOf('thrice'), 'Deleted');
        expect((await sb.readFile('x.txt')).toString()).toBe('x');
      }
      await standin.killPod(NS, podOf('thrice'), 'Deleted');
      const err = await rejection(sb.readFile('x.txt'));
      expect(err.code).toBe('SANDBOX_GONE');
      expect(err.message).toContain('died 3 times (last: Deleted');
    });

    it('fails with SANDBOX_GONE when a replayed call ends differently', async () => {
      const sb = await create('diverge');
      await sb.writeFile('w.txt', 'w');
      // Kubernetes sets a pod's host name to its name, which changes with each recreation.
      const first = await sb.exec(`test "$(cat /proc/sys/kernel/hostname)" = ${podOf('diverge')}`, {
        timeoutMs: 10_000,
      });
      expect(first.exitCode).toBe(0);
      await standin.killPod(NS, podOf('diverge'), 'Deleted');
      const err = await rejection(sb.exec('true', { timeoutMs: 10_000 }));
      expect(err.code).toBe('SANDBOX_GONE');
      expect(err.message).toMatch(
        /replaying call 2 \(exec\) after recovery gave a different outcome: exit 1 instead of 0/,
      );
    });
  });

  describe('janitor', () => {
    const objects = (jobId: string, deadline: Date): SandboxObjectOptions => ({
      name: sandboxName(jobId, randomBytes(3).toString('hex')),
      namespace: NS,
      jobId,
      image: 'img',
      cpuCores: 1,
      memoryMiB: 256,
      workspaceMiB: 64,
      tmpMiB: 64,
      activeDeadlineSeconds: 600,
      deadline,
    });

    it('deletes pods and policies of inactive jobs and of passed deadlines, and keeps the rest', async () => {
      const core = standin.kubeConfig().makeApiClient(CoreV1Api);
      const networking = standin.kubeConfig().makeApiClient(NetworkingV1Api);
      const future = new Date(Date.now() + 3_600_000);
      const sets = {
        active: objects('job-active', future),
        inactive: objects('job-inactive', future),
        expired: objects('job-active-expired', new Date(Date.now() - 1000)),
      };
      for (const o of Object.values(sets)) {
        await networking.createNamespacedNetworkPolicy({ namespace: NS, body: buildSandboxNetworkPolicy(o) });
        await core.createNamespacedPod({ namespace: NS, body: buildSandboxPod(o) });
      }
      // An orphaned policy (its pod never got created) of an inactive job.
      const orphan = objects('job-orphan', future);
      await networking.createNamespacedNetworkPolicy({
        namespace: NS,
        body: buildSandboxNetworkPolicy(orphan),
      });

      const asked: string[] = [];
      const janitor = createSandboxJanitor({
        kubeConfig: standin.kubeConfig(),
        namespace: NS,
        minAgeMs: 0,
        isJobActive: async (jobId) => {
          asked.push(jobId);
          return jobId.startsWith('job-active');
        },
      });
      const report = await janitor.sweep();
      expect([...report.pods].sort()).toEqual([`${sets.expired.name}-0`, `${sets.inactive.name}-0`].sort());
      expect([...report.networkPolicies].sort()).toEqual(
        [orphan.name, sets.expired.name, sets.inactive.name].sort(),
      );
      expect(report.errors).toEqual([]);
      expect(standin.podNames(NS)).toContain(`${sets.active.name}-0`);
      expect(standin.policyNames(NS)).toContain(sets.active.name);
      expect(asked).not.toContain('job-active-expired'); // the deadline alone decides
      expect((await janitor.sweep()).pods).toEqual([]);
      await core.deleteNamespacedPod({ name: `${sets.active.name}-0`, namespace: NS });
      await networking.deleteNamespacedNetworkPolicy({ name: sets.active.name, namespace: NS });
    });

    it('keeps young objects and those whose job state cannot be read', async () => {
      const sb = await create('young');
      const janitor = createSandboxJanitor({
        kubeConfig: standin.kubeConfig(),
        namespace: NS,
        isJobActive: async () => false,
      });
      expect(await janitor.sweep()).toEqual({ pods: [], networkPolicies: [], errors: [] });
      const unsure = createSandboxJanitor({
        kubeConfig: standin.kubeConfig(),
        namespace: NS,
        minAgeMs: 0,
        isJobActive: async () => {
          throw new Error('redis down');
        },
      });
      expect(await unsure.sweep()).toEqual({ pods: [], networkPolicies: [], errors: [] });
      expect((await sb.exec('true', { timeoutMs: 10_000 })).exitCode).toBe(0);
    });

    it('sweeps periodically between start and stop', async () => {
      const o = objects('job-periodic', new Date(Date.now() - 1));
      const core = standin.kubeConfig().makeApiClient(CoreV1Api);
      await core.createNamespacedPod({ namespace: NS, body: buildSandboxPod(o) });
      const janitor = createSandboxJanitor({
        kubeConfig: standin.kubeConfig(),
        namespace: NS,
        minAgeMs: 0,
        isJobActive: async () => true,
      });
      janitor.start(20);
      for (let i = 0; i < 100 && standin.podNames(NS).includes(`${o.name}-0`); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await janitor.stop();
      expect(standin.podNames(NS)).not.toContain(`${o.name}-0`);
    });
  });
});
