import { execFileSync, spawnSync } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../../src/bin/commands/worker.js';
import { createLogger } from '../../../src/observability/logger.js';
import { startE2eStack, type E2eStack } from '../../helpers/e2e-stack.js';

// Both processes' /metrics as Prometheus scrapes them: each registry holds only its own families,
// the default Node.js metrics keep their standard names, build_info is there, and Debian's promtool
// (`apt-get install prometheus`, scripts/setup.sh) lints nothing.

const promtool = spawnSync('promtool', ['--version']).status === 0;

/** Family names (from `# TYPE` lines) of a text exposition. */
function families(text: string): string[] {
  return [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
}

let stack: E2eStack;
let serveText: string;
let workerText: string;

beforeAll(async () => {
  stack = await startE2eStack({
    name: 'metrics',
    owner: 'acme',
    repos: {},
    script: () => ({ kind: 'final', content: 'done' }),
    worker: { port: 0 },
  });
  serveText = await (await fetch(`${stack.serve.url}/metrics`)).text();
  workerText = await (await fetch(`${stack.worker!.url!}/metrics`)).text();
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

describe('/metrics of serve and worker', () => {
  it('serve exposes webhook and queue families only; the worker job, sandbox and model families only', () => {
    const serve = families(serveText).filter((f) => f.startsWith('frognano_'));
    const worker = families(workerText).filter((f) => f.startsWith('frognano_'));
    expect(serve.sort()).toEqual([
      'frognano_build_info',
      'frognano_queue_depth',
      'frognano_webhook_duration_seconds',
      'frognano_webhooks_total',
    ]);
    expect(worker.sort()).toEqual([
      'frognano_build_info',
      'frognano_job_duration_seconds',
      'frognano_job_pickup_latency_seconds',
      'frognano_job_steps',
      'frognano_jobs_total',
      'frognano_model_server_up',
      'frognano_sandbox_failures_total',
      'frognano_tokens_total',
      'frognano_worker_active_jobs',
    ]);
  });

  it('keeps the default process and Node.js metrics under their standard names', () => {
    for (const text of [serveText, workerText]) {
      expect(families(text)).toEqual(
        expect.arrayContaining([
          'process_cpu_seconds_total',
          'process_resident_memory_bytes',
          'nodejs_eventloop_lag_seconds',
          'nodejs_heap_size_used_bytes',
        ]),
      );
      expect(text).not.toMatch(/frognano_(process|nodejs)_/);
    }
  });

  it('reports the build: version from package.json, a commit, the Node.js version', () => {
    const line = /^frognano_build_info\{version="([^"]+)",commit="([^"]+)",node="([^"]+)"\} 1$/m;
    for (const text of [serveText, workerText]) {
      const m = line.exec(text);
      expect(m, text.slice(0, 400)).not.toBeNull();
      expect(m![1]).toMatch(/^\d+\.\d+\.\d+/);
      expect(m![2]).toMatch(/^([0-9a-f]{7,40}|unknown)$/);
      expect(m![3]).toBe(process.version);
    }
  });

  it('probes the model server and counts running jobs at scrape time', () => {
    expect(workerText).toMatch(/^frognano_model_server_up 1$/m);
    expect(workerText).toMatch(/^frognano_worker_active_jobs 0$/m);
    expect(workerText).toMatch(/^frognano_sandbox_failures_total\{driver="local"\} 0$/m);
  });

  it.skipIf(!promtool)('passes `promtool check metrics` on both processes', () => {
    for (const text of [serveText, workerText]) {
      const out = execFileSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(out).toBe('');
    }
  });
});

/** An IPv4 address of this machine other than loopback, if it has one. */
const external = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

describe.skipIf(!external)('the worker’s HTTP server', () => {
  it('binds WORKER_HOST: loopback by default, as its log says; every interface with 0.0.0.0', async () => {
    const reach = async (url: string) =>
      (await fetch(url, { signal: AbortSignal.timeout(2000) }).catch(() => null))?.status ?? 'refused';
    for (const [host, fromOutside] of [
      [stack.env.workerHost, 'refused'],
      ['0.0.0.0', 200],
    ] as const) {
      const lines: string[] = [];
      const logger = createLogger({
        level: 'info',
        destination: { write: (l: string) => void lines.push(l) },
      });
      const worker = await startWorker({
        env: { ...stack.env, workerHost: host },
        logger,
        port: 0,
        throttle: false,
        run: () => Promise.reject(new Error('no job runs in this test')),
      });
      try {
        const port = new URL(worker.url!).port;
        const started = lines
          .map((l) => JSON.parse(l) as { msg: string; listen?: string })
          .find((l) => l.msg === 'worker started');
        expect(started?.listen).toBe(`${host}:${port}`);
        expect(await reach(`http://127.0.0.1:${port}/healthz`)).toBe(200);
        expect(await reach(`http://${external}:${port}/healthz`)).toBe(fromOutside);
      } finally {
        await worker.close();
      }
    }
    expect(stack.env.workerHost).toBe('127.0.0.1');
  });
});
