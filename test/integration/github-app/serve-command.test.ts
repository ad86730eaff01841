import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGheStandin, type GheStandin } from '../../helpers/ghe-standin/index.js';
import { closedPort, connectTestRedis, deletePrefix, uniquePrefix, waitFor } from '../queue/redis-helper.js';

/**
 * The `serve` and `worker` commands as processes: configuration errors stop them with the variable
 * named; SIGTERM drains (a request in flight still gets its answer) and exits 0.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url));
const cli = fileURLToPath(new URL('../../../src/bin/cli.ts', import.meta.url));

let ghe: GheStandin;
let redis: Redis;
let slowModel: Server;
let slowModelUrl: string;
const prefix = uniquePrefix('cmd');
const children: ChildProcess[] = [];

beforeAll(async () => {
  redis = await connectTestRedis();
  ghe = await startGheStandin();
  // A model server whose model list takes a second: a /readyz request stays in flight that long.
  slowModel = createServer((req, res) => {
    setTimeout(
      () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[]}'),
      1000,
    );
    void req;
  });
  await new Promise<void>((resolve) => slowModel.listen(0, '127.0.0.1', resolve));
  slowModelUrl = `http://127.0.0.1:${(slowModel.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await ghe?.close();
  slowModel?.closeAllConnections();
  await new Promise((r) => slowModel?.close(r));
  await deletePrefix(redis, prefix);
  redis?.disconnect();
});

function run(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out, exited };
}

function baseEnv(port: number): Record<string, string> {
  return {
    APP_ID: String(ghe.appId),
    PRIVATE_KEY: ghe.privateKey,
    WEBHOOK_SECRET: ghe.webhookSecret,
    GHE_HOST: ghe.host,
    GHE_PROTOCOL: 'http',
    QUEUE_PREFIX: prefix,
    MODEL_URL: slowModelUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    SHUTDOWN_TIMEOUT_MS: '5000',
  };
}

describe('frognano-bot serve / worker', () => {
  it('stops with exit code 1 and names every bad variable', async () => {
    const { out, exited } = run(['serve'], { PORT: 'eighty', GHE_PROTOCOL: 'gopher' });
    expect(await exited).toBe(1);
    for (const name of ['APP_ID', 'WEBHOOK_SECRET', 'PRIVATE_KEY', 'PORT', 'GHE_PROTOCOL'])
      expect(out.stderr).toContain(name);
    expect(out.stderr).toContain('[CONFIG_INVALID]');
  });

  it('serve drains at SIGTERM: the request in flight is answered, then it exits 0', async () => {
    const port = await closedPort();
    const { child, out, exited } = run(['serve'], baseEnv(port));
    const base = `http://127.0.0.1:${port}`;
    await waitFor(
      async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok,
      `serve on ${base} (${out.stderr})`,
      20_000,
    );
    const inFlight = fetch(`${base}/readyz`);
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await exited).toBe(0);
  });

  it('worker starts, serves /healthz and /metrics, and exits 0 at SIGTERM', async () => {
    const workerPort = await closedPort();
    const { child, out, exited } = run(['worker'], {
      ...baseEnv(await closedPort()),
      WORKER_PORT: String(workerPort),
    });
    const base = `http://127.0.0.1:${workerPort}`;
    await waitFor(
      async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok,
      `worker on ${base} (${out.stderr})`,
      20_000,
    );
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('frognano_jobs_total');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('worker opens /healthz while Redis is unreachable, and /readyz says what it waits for (issue 12 item 7)', async () => {
    const workerPort = await closedPort();
    const { child, out, exited } = run(['worker'], {
      ...baseEnv(await closedPort()),
      REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
      WORKER_PORT: String(workerPort),
    });
    const base = `http://127.0.0.1:${workerPort}`;
    await waitFor(
      async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok,
      `worker /healthz on ${base} with Redis down (${out.stderr})`,
      20_000,
    );
    // Start-up goes on (the app's login, then Redis); /readyz names the step it is at.
    const seen: string[] = [];
    await waitFor(
      async () => {
        const ready = await fetch(`${base}/readyz`);
        const body = (await ready.json()) as { ready: boolean; waitingFor?: string };
        expect(ready.status).toBe(503);
        expect(body.ready).toBe(false);
        seen.push(body.waitingFor ?? '');
        return body.waitingFor?.includes('Redis');
      },
      'readyz waiting for Redis',
      15_000,
    );
    expect(seen.every((s) => s.length > 0)).toBe(true);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
