import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { ENV_DOCS, ENV_SPECS, loadEnv, renderEnvTable } from '../../../src/config/env.js';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PEM = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const dir = mkdtempSync(path.join(tmpdir(), 'env-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const minimal = { APP_ID: '12', PRIVATE_KEY: PEM, WEBHOOK_SECRET: 'a-long-secret' };

function problems(env: Record<string, string>): string[] {
  try {
    loadEnv(env);
  } catch (err) {
    if (isAppError(err, 'CONFIG_INVALID')) return err.details?.messages as string[];
    throw err;
  }
  throw new Error('loadEnv accepted the environment');
}

describe('loadEnv', () => {
  it('applies the documented defaults', () => {
    const env = loadEnv(minimal);
    expect(env).toMatchObject({
      appId: 12,
      gheHost: null,
      gheProtocol: 'https',
      githubApiUrl: 'https://api.github.com',
      githubWebUrl: 'https://github.com',
      redisUrl: 'redis://127.0.0.1:6379',
      port: 3000,
      modelUrl: 'http://127.0.0.1:30000/v1',
      modelName: 'microsoft/FrogNano-4B-2609',
      modelApiKey: null,
      sandboxDriver: 'local',
      triggerLabel: 'frognano',
      webhookPath: '/api/github/webhooks',
      adminUser: null,
      policyFile: null,
    });
    expect(env.privateKey).toBe(PEM);
  });

  it('builds the GitHub Enterprise Server URLs from GHE_HOST and GHE_PROTOCOL', () => {
    const env = loadEnv({ ...minimal, GHE_HOST: 'ghe.example.com', GHE_PROTOCOL: 'http' });
    expect(env.githubApiUrl).toBe('http://ghe.example.com/api/v3');
    expect(env.githubWebUrl).toBe('http://ghe.example.com');
    expect(loadEnv({ ...minimal, GHE_HOST: 'ghe.example.com:8443' }).githubApiUrl).toBe(
      'https://ghe.example.com:8443/api/v3',
    );
  });

  it('names every missing variable at once', () => {
    const p = problems({});
    expect(p.map((x) => x.split(':')[0])).toEqual(['APP_ID', 'WEBHOOK_SECRET', 'PRIVATE_KEY']);
  });

  it('names malformed variables with the value, but never echoes a secret', () => {
    const p = problems({
      ...minimal,
      APP_ID: 'twelve',
      PORT: '70000',
      GHE_HOST: 'https://ghe.example.com',
      GHE_PROTOCOL: 'ftp',
      REDIS_URL: 'http://localhost',
      SANDBOX_DRIVER: 'docker',
      WORKER_CONCURRENCY: '0',
      WEBHOOK_SECRET: 'short',
    });
    const byName = Object.fromEntries(p.map((x) => [x.split(':')[0], x]));
    expect(Object.keys(byName).sort()).toEqual(
      [
        'APP_ID',
        'GHE_HOST',
        'GHE_PROTOCOL',
        'PORT',
        'REDIS_URL',
        'SANDBOX_DRIVER',
        'WEBHOOK_SECRET',
        'WORKER_CONCURRENCY',
      ].sort(),
    );
    expect(byName.GHE_HOST).toContain('without scheme');
    expect(byName.APP_ID).toBe('APP_ID: must be a whole number from 1 up (got "twelve")');
    expect(byName.PORT).toBe('PORT: must be a whole number from 1 to 65535 (got "70000")');
    expect(byName.WORKER_CONCURRENCY).toBe(
      'WORKER_CONCURRENCY: must be a whole number from 1 to 64 (got "0")',
    );
    expect(byName.WEBHOOK_SECRET).not.toContain('short');
    try {
      loadEnv({ ...minimal, APP_ID: 'x' });
    } catch (err) {
      expect((err as Error).message).toContain('APP_ID');
      expect(isAppError(err) && err.retryable).toBe(false);
    }
  });

  it('treats empty values as unset', () => {
    expect(loadEnv({ ...minimal, PORT: '', GHE_HOST: '' })).toMatchObject({ port: 3000, gheHost: null });
  });

  it('reads the private key inline (escaped newlines, base64) or from PRIVATE_KEY_PATH', () => {
    expect(loadEnv({ ...minimal, PRIVATE_KEY: PEM.replace(/\n/g, '\\n') }).privateKey).toBe(PEM);
    expect(loadEnv({ ...minimal, PRIVATE_KEY: Buffer.from(PEM).toString('base64') }).privateKey).toBe(PEM);
    const file = path.join(dir, 'key.pem');
    writeFileSync(file, PEM);
    const { PRIVATE_KEY: _, ...noKey } = minimal;
    expect(loadEnv({ ...noKey, PRIVATE_KEY_PATH: file }).privateKey).toBe(PEM);
    expect(problems({ ...noKey, PRIVATE_KEY_PATH: path.join(dir, 'missing.pem') })[0]).toMatch(
      /^PRIVATE_KEY_PATH: cannot read .*ENOENT/,
    );
    expect(problems({ ...minimal, PRIVATE_KEY_PATH: file })[0]).toContain('not both');
    expect(problems({ ...minimal, PRIVATE_KEY: 'not a key' })[0]).toContain('not a PEM private key');
    const broken = problems({
      ...minimal,
      PRIVATE_KEY: '-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----',
    });
    expect(broken[0]).toBe('PRIVATE_KEY: the PEM private key cannot be parsed');
  });

  it('wants ADMIN_USER and ADMIN_PASSWORD together', () => {
    expect(problems({ ...minimal, ADMIN_USER: 'root' })).toEqual([
      'ADMIN_PASSWORD: required when ADMIN_USER is set',
    ]);
    expect(problems({ ...minimal, ADMIN_USER: 'root', ADMIN_PASSWORD: 'short' })[0]).toMatch(
      /^ADMIN_PASSWORD: must be at least 12/,
    );
    expect(
      loadEnv({ ...minimal, ADMIN_USER: 'root', ADMIN_PASSWORD: 'correct horse battery' }).adminUser,
    ).toBe('root');
  });
});

describe('sandbox driver', () => {
  it('refuses unenforced sandbox limits and probes GitHub, the model server, Redis and Kubernetes by default', () => {
    const env = loadEnv(minimal);
    expect(env.sandboxAllowUnlimited).toBe(false);
    expect(env.sandboxHostUid).toBe(65534);
    expect(env.egressProbeTargets).toEqual([
      { name: 'github', url: 'https://github.com' },
      { name: 'github-api', url: 'https://api.github.com' },
      { name: 'model-server', url: 'http://127.0.0.1:30000/v1' },
      { name: 'redis', url: 'redis://127.0.0.1:6379' },
      { name: 'kubernetes-api', url: 'https://kubernetes.default.svc' },
    ]);
    const inPod = loadEnv({
      ...minimal,
      GHE_HOST: 'ghe.example.com',
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '6443',
      SANDBOX_ALLOW_UNLIMITED: 'true',
    });
    expect(inPod.sandboxAllowUnlimited).toBe(true);
    expect(inPod.egressProbeTargets.map((t) => t.url)).toEqual([
      'https://ghe.example.com',
      'http://127.0.0.1:30000/v1',
      'redis://127.0.0.1:6379',
      'https://10.96.0.1:6443',
    ]);
  });

  it('reads SANDBOX_EGRESS_PROBE_TARGETS as URLs or name=URL, with default for the built-in list', () => {
    const env = loadEnv({
      ...minimal,
      SANDBOX_EGRESS_PROBE_TARGETS: 'metadata=http://169.254.169.254, https://vault.internal:8200',
    });
    expect(env.egressProbeTargets).toEqual([
      { name: 'metadata', url: 'http://169.254.169.254' },
      { name: 'vault.internal:8200', url: 'https://vault.internal:8200' },
    ]);
    const withDefault = loadEnv({ ...minimal, SANDBOX_EGRESS_PROBE_TARGETS: 'default,db=redis://db:6380' });
    expect(withDefault.egressProbeTargets.map((t) => t.name)).toEqual([
      'github',
      'github-api',
      'model-server',
      'redis',
      'kubernetes-api',
      'db',
    ]);
    const p = problems({
      ...minimal,
      SANDBOX_EGRESS_PROBE_TARGETS: 'default,nope',
      SANDBOX_ALLOW_UNLIMITED: 'yes',
    });
    expect(p.find((x) => x.startsWith('SANDBOX_EGRESS_PROBE_TARGETS'))).toContain(
      '"nope" is not a URL or name=URL',
    );
    expect(p.find((x) => x.startsWith('SANDBOX_ALLOW_UNLIMITED'))).toContain('must be true or false');
  });

  it('wants SANDBOX_IMAGE with the kubernetes driver', () => {
    expect(problems({ ...minimal, SANDBOX_DRIVER: 'kubernetes' })[0]).toMatch(
      /^SANDBOX_IMAGE: required when SANDBOX_DRIVER is kubernetes/,
    );
    const env = loadEnv({ ...minimal, SANDBOX_DRIVER: 'kubernetes', SANDBOX_IMAGE: 'registry/sandbox:1' });
    expect(env).toMatchObject({
      sandboxDriver: 'kubernetes',
      sandboxImage: 'registry/sandbox:1',
      sandboxNamespace: 'frognano-sandboxes',
    });
  });
});

describe('ENV_DOCS', () => {
  it('documents every variable with its default, and renders a Markdown table', () => {
    expect(ENV_DOCS.map((d) => d.name)).toEqual(Object.keys(ENV_SPECS));
    for (const d of ENV_DOCS) expect(d.description.length).toBeGreaterThan(10);
    const table = renderEnvTable();
    expect(table.split('\n')).toHaveLength(ENV_DOCS.length + 2);
    expect(table).toContain('| `REDIS_URL` |  | `redis://127.0.0.1:6379` |');
    expect(table).toContain('| `APP_ID` | yes |');
  });
});

describe('JOB_RETRIES (retries are retries)', () => {
  it('counts retries after the first try; the default is one retry', () => {
    expect(loadEnv(minimal)).toMatchObject({ jobAttempts: 2, warnings: [] });
    expect(loadEnv({ ...minimal, JOB_RETRIES: '0' }).jobAttempts).toBe(1);
    expect(loadEnv({ ...minimal, JOB_RETRIES: '4' }).jobAttempts).toBe(5);
  });

  it('still reads the old JOB_ATTEMPTS, with a warning naming JOB_RETRIES', () => {
    const env = loadEnv({ ...minimal, JOB_ATTEMPTS: '3' });
    expect(env.jobAttempts).toBe(3);
    expect(env.warnings).toEqual([
      'JOB_ATTEMPTS is deprecated: set JOB_RETRIES=2 instead (retries after the first try)',
    ]);
    const both = loadEnv({ ...minimal, JOB_ATTEMPTS: '3', JOB_RETRIES: '0' });
    expect(both.jobAttempts).toBe(1);
    expect(both.warnings[0]).toContain('ignored because JOB_RETRIES is set');
  });
});
