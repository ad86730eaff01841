import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  formatDoctorReport,
  main,
  runDoctorChecks,
  type DoctorCheck,
  type DoctorOptions,
} from '../../../src/bin/commands/doctor.js';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';
import { startKubeStandin, type KubeStandin } from '../../helpers/kube-standin/kube-standin.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
  type ScriptedTurn,
} from '../../helpers/scripted-model-server.js';

// `doctor` against the stand-ins (GitHub Enterprise, Kubernetes API, SGLang) and the real Redis,
// healthy first, then with one thing broken at a time.

const REDIS_URL = 'redis://127.0.0.1:6379';

/** A loopback port nobody listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
const MODEL = 'microsoft/FrogNano-4B-2609';
const NS = 'sandboxes';

describe('frognano-bot doctor', () => {
  let ghe: GheStandin;
  let kube: KubeStandin;
  let model: ScriptedModelServer;
  let toolTurn: 'parsed' | 'xml' = 'parsed';

  const healthy = (): DoctorOptions => ({
    github: { apiUrl: ghe.apiUrl, appId: ghe.appId, privateKey: ghe.privateKey },
    redisUrl: REDIS_URL,
    model: { url: model.url, name: MODEL },
    sandbox: {
      driver: 'kubernetes',
      kubeConfig: kube.kubeConfig(),
      namespace: NS,
      image: 'frognano-sandbox:test',
    },
    timeoutMs: 5000,
    env: {}, // no CA bundle checks: the stand-ins are plain HTTP (doctor-tls.test.ts covers TLS)
  });
  const byName = (checks: DoctorCheck[], prefix: string): DoctorCheck => {
    const c = checks.find((x) => x.name.startsWith(prefix));
    if (!c) throw new Error(`no check named ${prefix}…: ${checks.map((x) => x.name).join(', ')}`);
    return c;
  };
  const failedNames = (checks: DoctorCheck[]): string[] =>
    checks.filter((c) => c.status !== 'ok').map((c) => c.name);

  beforeAll(async () => {
    const redis = new Redis(REDIS_URL, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      await redis.ping();
    } catch {
      throw new Error(
        'doctor tests need Redis on 127.0.0.1:6379: start it with `redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save ""`',
      );
    } finally {
      redis.disconnect();
    }
    ghe = await startGheStandin({ appId: 4711 });
    kube = await startKubeStandin({ namespaces: [NS] });
    model = await startScriptedModelServer({
      modelName: MODEL,
      script: (): ScriptedTurn =>
        toolTurn === 'parsed'
          ? { kind: 'tool_calls', calls: [{ name: 'report_number', arguments: { value: 7 } }] }
          : { kind: 'xml_content', calls: [{ name: 'report_number', arguments: { value: 7 } }] },
    });
  });
  afterAll(async () => {
    await Promise.all([ghe?.close(), kube?.close(), model?.close()]);
  });

  it('passes every check on a healthy install', async () => {
    const checks = await runDoctorChecks(healthy());
    expect(failedNames(checks)).toEqual([]);
    expect(checks.map((c) => c.name)).toEqual([
      `GitHub App 4711 at ${ghe.apiUrl}`,
      `Redis at ${REDIS_URL}`,
      `model server at ${model.url} serves ${MODEL}`,
      'model server returns parsed tool calls',
      `Kubernetes API at ${kube.url}`,
      'may create pods in sandboxes',
      'may get pods in sandboxes',
      'may list pods in sandboxes',
      'may delete pods in sandboxes',
      'may create pods/exec in sandboxes',
      'may create networkpolicies in sandboxes',
      'may list networkpolicies in sandboxes',
      'may delete networkpolicies in sandboxes',
      'sandbox pod starts from frognano-sandbox:test',
      'egress from a sandbox is blocked',
    ]);
    // The model check sent one request with one tool.
    const last = model.requests[model.requests.length - 1]!;
    expect((last.body as { tools: unknown[] }).tools).toHaveLength(1);
    // The sandbox it started is gone.
    expect(kube.podNames(NS)).toEqual([]);
    expect(kube.policyNames(NS)).toEqual([]);
    const report = formatDoctorReport(checks);
    expect(report.split('\n').filter((l) => l.startsWith('✓ '))).toHaveLength(checks.length);
    expect(report.trimEnd().endsWith(`All ${checks.length} checks passed.`)).toBe(true);
  });

  it('a private key of another App: the GitHub check fails with the fix', async () => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs1', format: 'pem' })
      .toString();
    const checks = await runDoctorChecks({
      ...healthy(),
      github: { ...healthy().github, privateKey: other },
    });
    expect(failedNames(checks)).toEqual([`GitHub App 4711 at ${ghe.apiUrl}`]);
    const c = byName(checks, 'GitHub App');
    expect(c.detail).toContain('refused the App JWT (401');
    expect(c.fix).toContain('APP_ID and PRIVATE_KEY');
    expect(formatDoctorReport(checks)).toContain(
      `✗ GitHub App 4711 at ${ghe.apiUrl} — the host refused the App JWT (401`,
    );
  });

  it('an unreachable GitHub host: the GitHub check fails', async () => {
    const checks = await runDoctorChecks({
      ...healthy(),
      github: { ...healthy().github, apiUrl: `http://127.0.0.1:${await closedPort()}/api/v3` },
    });
    const c = byName(checks, 'GitHub App');
    expect([c.status, c.fix]).toEqual(['failed', expect.stringContaining('GHE_HOST')]);
    expect(c.detail).toContain('cannot reach the host');
  });

  it('no Redis: the Redis check fails', async () => {
    const port = await closedPort();
    const checks = await runDoctorChecks({ ...healthy(), redisUrl: `redis://127.0.0.1:${port}` });
    expect(failedNames(checks)).toEqual([`Redis at redis://127.0.0.1:${port}`]);
    expect(byName(checks, 'Redis').fix).toContain('REDIS_URL');
  });

  it('a model server without the qwen3_coder tool-call parser: the tool-call check fails', async () => {
    toolTurn = 'xml';
    try {
      const checks = await runDoctorChecks(healthy());
      expect(failedNames(checks)).toEqual(['model server returns parsed tool calls']);
      const c = byName(checks, 'model server returns parsed tool calls');
      expect(c.detail).toContain('came back as text');
      expect(c.fix).toBe('restart SGLang with --reasoning-parser qwen3 --tool-call-parser qwen3_coder');
    } finally {
      toolTurn = 'parsed';
    }
  });

  it('a model that is not served: the list check fails and the tool check is skipped', async () => {
    const checks = await runDoctorChecks({ ...healthy(), model: { url: model.url, name: 'other/model' } });
    expect(byName(checks, 'model server at').status).toBe('failed');
    expect(byName(checks, 'model server at').detail).toBe(`it serves ${MODEL}`);
    expect(byName(checks, 'model server returns').status).toBe('skipped');
  });

  it('a missing Kubernetes permission: that verb fails and the sandbox checks are skipped', async () => {
    kube.denied.add('create pods/exec');
    try {
      const checks = await runDoctorChecks(healthy());
      expect(failedNames(checks)).toEqual([
        'may create pods/exec in sandboxes',
        'sandbox pod starts from frognano-sandbox:test',
        'egress from a sandbox is blocked',
      ]);
      expect(byName(checks, 'may create pods/exec').fix).toContain('deploy/base/rbac.yaml');
      expect(byName(checks, 'sandbox pod starts').status).toBe('skipped');
    } finally {
      kube.denied.clear();
    }
  });

  it('rejected Kubernetes credentials: the API check fails and the rest is skipped', async () => {
    const checks = await runDoctorChecks({
      ...healthy(),
      sandbox: {
        driver: 'kubernetes',
        kubeConfig: kube.kubeConfig({ token: 'wrong' }),
        namespace: NS,
        image: 'img',
      },
    });
    const api = byName(checks, 'Kubernetes API');
    expect([api.status, api.detail]).toEqual(['failed', expect.stringContaining('401')]);
    expect(checks.filter((c) => c.status === 'skipped')).toHaveLength(10);
    // Skipped checks are shown apart and not counted as failed.
    const report = formatDoctorReport(checks);
    expect(report).toContain('- sandbox pod starts from img — skipped: the Kubernetes API is unreachable');
    expect(report.trimEnd().split('\n').at(-1)).toBe(`1 of ${checks.length} checks failed, 10 skipped.`);
  });

  it('a sandbox image that cannot be pulled: the start check fails with the fix', async () => {
    kube.faults.imagePull = true;
    try {
      const checks = await runDoctorChecks(healthy());
      expect(failedNames(checks)).toEqual([
        'sandbox pod starts from frognano-sandbox:test',
        'egress from a sandbox is blocked',
      ]);
      const c = byName(checks, 'sandbox pod starts');
      expect(c.detail).toContain('cannot be pulled');
      expect(c.fix).toContain('SANDBOX_IMAGE');
    } finally {
      kube.faults.imagePull = false;
    }
  });

  it('the shipped example sandbox image left in place: a placeholder check fails with the file to edit', async () => {
    const image = 'registry.example.com/frognano/frognano-sandbox:0.1.0';
    const checks = await runDoctorChecks({
      ...healthy(),
      sandbox: { driver: 'kubernetes', kubeConfig: kube.kubeConfig(), namespace: NS, image },
    });
    expect(failedNames(checks)).toEqual(["SANDBOX_IMAGE is this site's own value"]);
    expect(byName(checks, 'SANDBOX_IMAGE')).toMatchObject({
      detail: `${image} is a placeholder (a reserved example domain)`,
      fix: expect.stringContaining('deploy/base/config.yaml'),
    });
  });

  it('a cluster that ignores NetworkPolicy: the egress check fails', async () => {
    const leaky = await startKubeStandin({ namespaces: [NS], ignoreNetworkPolicy: true });
    try {
      const checks = await runDoctorChecks({
        ...healthy(),
        sandbox: { driver: 'kubernetes', kubeConfig: leaky.kubeConfig(), namespace: NS, image: 'img' },
      });
      expect(failedNames(checks)).toEqual(['egress from a sandbox is blocked']);
      const c = byName(checks, 'egress');
      expect(c.detail).toBe(
        'this cluster does not enforce NetworkPolicy: a sandbox reached GitHub host and model server',
      );
      expect(c.fix).toContain('CNI that enforces NetworkPolicy');
    } finally {
      await leaky.close();
    }
  });

  describe('main', () => {
    let dir: string;
    const saved = { ...process.env };
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'doctor-test-'));
    });
    afterAll(async () => {
      process.env = saved;
      await rm(dir, { recursive: true, force: true });
    });
    const run = async (
      env: Record<string, string | undefined>,
      argv: string[] = [],
    ): Promise<{ code: number; out: string }> => {
      const kubeconfig = path.join(dir, 'kubeconfig');
      await writeFile(kubeconfig, kube.kubeConfig().exportConfig());
      process.env = {
        PATH: saved.PATH,
        APP_ID: String(ghe.appId),
        PRIVATE_KEY: ghe.privateKey,
        WEBHOOK_SECRET: 'doctor-test-secret',
        GHE_HOST: ghe.host,
        GHE_PROTOCOL: 'http',
        REDIS_URL,
        MODEL_URL: model.url,
        MODEL_NAME: MODEL,
        SANDBOX_DRIVER: 'kubernetes',
        SANDBOX_NAMESPACE: NS,
        SANDBOX_IMAGE: 'frognano-sandbox:test',
        KUBECONFIG: kubeconfig,
        ...env,
      };
      let out = '';
      const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        out += chunk.toString();
        return true;
      });
      try {
        return { code: await main(argv), out };
      } finally {
        spy.mockRestore();
      }
    };

    it('exits 0 and prints ✓ lines when everything works', async () => {
      const { code, out } = await run({});
      expect(code).toBe(0);
      expect(out).toContain(`✓ GitHub App ${ghe.appId} at ${ghe.apiUrl}`);
      expect(out).toContain('✓ egress from a sandbox is blocked');
      expect(out).not.toContain('✗');
    });

    it('exits 1 and prints the fix when something is broken', async () => {
      const { code, out } = await run({ MODEL_NAME: 'nope' });
      expect(code).toBe(1);
      expect(out).toMatch(
        /^✗ model server at .* serves nope — it serves microsoft\/FrogNano-4B-2609; fix: set MODEL_NAME/m,
      );
    });

    it('reports configuration errors as a failed check; --json prints the checks', async () => {
      const bad = await run({ SANDBOX_IMAGE: undefined }, ['--json']);
      expect(bad.code).toBe(1);
      const parsed = JSON.parse(bad.out) as DoctorCheck[];
      expect(parsed).toEqual([
        expect.objectContaining({
          name: 'configuration',
          status: 'failed',
          detail: expect.stringContaining('SANDBOX_IMAGE'),
        }),
      ]);
      expect((await run({}, ['--bogus'])).code).toBe(2);
    });
  });
});
