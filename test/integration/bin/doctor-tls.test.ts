import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { cloneRepository } from '../../../src/git/clone-repository.js';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../helpers/scripted-model-server.js';
import {
  createThrowawayCa,
  startTlsProxy,
  type ThrowawayCa,
  type TlsProxy,
} from '../../helpers/tls-standin.js';

// An internal certificate authority: the GHES stand-in (REST and git smart HTTP) and the SGLang
// stand-in behind TLS signed by a CA made with openssl for this run. `frognano-bot doctor` runs as a
// real process (Node reads NODE_EXTRA_CA_CERTS only at start); the clone is the worker's own.

const ROOT = resolve(import.meta.dirname, '../../..');
const CLI = join(ROOT, 'dist/bin/cli.js');
const MODEL = 'microsoft/FrogNano-4B-2609';

let ca: ThrowawayCa;
let ghe: GheStandin;
let model: ScriptedModelServer;
let gheTls: TlsProxy;
let modelTls: TlsProxy;

const portOf = (url: string): number => Number(new URL(url).port);

beforeAll(async () => {
  ca = createThrowawayCa();
  ghe = await startGheStandin({ appId: 4711 });
  model = await startScriptedModelServer({
    modelName: MODEL,
    script: () => ({ kind: 'tool_calls', calls: [{ name: 'report_number', arguments: { value: 7 } }] }),
  });
  gheTls = await startTlsProxy({ targetPort: portOf(ghe.url), cert: ca.cert, key: ca.key });
  modelTls = await startTlsProxy({ targetPort: portOf(model.url), cert: ca.cert, key: ca.key });
});

afterAll(async () => {
  await Promise.all([gheTls?.close(), modelTls?.close()]);
  await Promise.all([ghe?.close(), model?.close()]);
  ca?.remove();
});

/** `frognano-bot doctor` against the TLS stand-ins, local sandbox driver, with `extra` variables. */
function doctor(extra: Record<string, string>): Promise<{ code: number; stdout: string }> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    APP_ID: String(ghe.appId),
    PRIVATE_KEY: ghe.privateKey,
    WEBHOOK_SECRET: 'doctor-tls-test-secret',
    GHE_HOST: gheTls.host,
    GHE_PROTOCOL: 'https',
    REDIS_URL: 'redis://127.0.0.1:6379',
    MODEL_URL: `https://${modelTls.host}/v1`,
    MODEL_NAME: MODEL,
    SANDBOX_DRIVER: 'local',
    ...extra,
  };
  return new Promise((done) => {
    execFile(process.execPath, [CLI, 'doctor'], { env, timeout: 120_000 }, (err, stdout) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout });
    });
  });
}

describe('doctor with an internal CA', () => {
  it('fails without the bundle, naming NODE_EXTRA_CA_CERTS and GIT_SSL_CAINFO', async () => {
    const { code, stdout } = await doctor({});
    expect(code).toBe(1);
    expect(stdout).toMatch(
      new RegExp(
        `^✗ TLS to the GitHub host ${gheTls.host} \\(Node\\) — the certificate is not trusted \\((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)`,
        'm',
      ),
    );
    const nodeLine = stdout
      .split('\n')
      .find((l) => l.startsWith(`✗ TLS to the GitHub host ${gheTls.host} (Node)`));
    expect(nodeLine).toContain('fix: mount your internal CA bundle (PEM) and set NODE_EXTRA_CA_CERTS');
    expect(stdout).toMatch(
      new RegExp(`^✗ TLS to the model server ${modelTls.host} \\(Node\\) — .*NODE_EXTRA_CA_CERTS`, 'm'),
    );
    expect(stdout).toMatch(
      new RegExp(`^✗ TLS to the GitHub host ${gheTls.host} \\(git\\) — .*GIT_SSL_CAINFO`, 'm'),
    );
    // The App check behind it says the same instead of a bare "fetch failed".
    expect(stdout).toMatch(/^✗ GitHub App 4711 at .* — cannot reach the host: .*fix: .*NODE_EXTRA_CA_CERTS/m);
  });

  it('passes with the bundle in NODE_EXTRA_CA_CERTS and GIT_SSL_CAINFO', async () => {
    const { code, stdout } = await doctor({ NODE_EXTRA_CA_CERTS: ca.caFile, GIT_SSL_CAINFO: ca.caFile });
    expect(stdout).not.toContain('✗');
    expect(stdout).toContain(
      `✓ CA bundle NODE_EXTRA_CA_CERTS=${ca.caFile} (1 certificate(s), first CN=FrogNano test internal CA)`,
    );
    expect(stdout).toContain(
      `✓ TLS to the GitHub host ${gheTls.host} (Node) (certificate issued by FrogNano test internal CA)`,
    );
    expect(stdout).toContain(`✓ TLS to the GitHub host ${gheTls.host} (git)`);
    expect(stdout).toContain(`✓ TLS to the model server ${modelTls.host} (Node)`);
    expect(stdout).toContain(`✓ GitHub App 4711 at https://${gheTls.host}/api/v3`);
    expect(stdout).toMatch(/^All \d+ checks passed\.$/m);
    expect(code).toBe(0);
  });

  it('names GIT_SSL_CAINFO when only Node has the bundle, and a missing bundle file', async () => {
    const onlyNode = await doctor({ NODE_EXTRA_CA_CERTS: ca.caFile });
    expect(onlyNode.code).toBe(1);
    const failed = onlyNode.stdout.split('\n').filter((l) => l.startsWith('✗'));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toContain(
      `TLS to the GitHub host ${gheTls.host} (git) — git does not trust the certificate`,
    );
    expect(failed[0]).toContain('fix: set GIT_SSL_CAINFO to the path of your internal CA bundle');

    const missing = await doctor({ NODE_EXTRA_CA_CERTS: '/nonexistent/ca.pem', GIT_SSL_CAINFO: ca.caFile });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(
      /^✗ CA bundle NODE_EXTRA_CA_CERTS=\/nonexistent\/ca.pem — cannot read it: ENOENT; fix: mount the CA bundle/m,
    );
  });
});

describe('a job clones over TLS signed by the internal CA', () => {
  let dir: string;
  const saved = process.env.GIT_SSL_CAINFO;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tls-clone-'));
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.GIT_SSL_CAINFO;
    else process.env.GIT_SSL_CAINFO = saved;
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('clones with GIT_SSL_CAINFO, and fails with the fix named without it', async () => {
    const repo = await ghe.createRepo('octo-org', 'tls-demo', { files: { 'calc.py': 'x = 1\n' } });
    const { token } = ghe.createInstallationToken();
    const options = {
      url: `https://${gheTls.host}/octo-org/tls-demo.git`,
      branch: 'main',
      auth: { token, baseUrl: `https://${gheTls.host}` },
    };

    delete process.env.GIT_SSL_CAINFO;
    const err = await cloneRepository({ ...options, dir: join(dir, 'without') }).catch((e: unknown) => e);
    expect(isAppError(err, 'GITHUB_API_ERROR')).toBe(true);
    expect((err as Error).message).toContain('GIT_SSL_CAINFO');
    expect((err as Error).message).not.toContain(token);

    process.env.GIT_SSL_CAINFO = ca.caFile;
    const { headSha } = await cloneRepository({ ...options, dir: join(dir, 'with') });
    expect(headSha).toBe(repo.headSha);
    expect(ghe.state.gitRequests.length).toBeGreaterThan(0);
  });
});
