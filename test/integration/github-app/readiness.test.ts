import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkReadiness } from '../../../src/github-app/readiness.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../helpers/scripted-model-server.js';
import { closedPort, connectTestRedis } from '../queue/redis-helper.js';

let redis: Redis;
let model: ScriptedModelServer;

beforeAll(async () => {
  redis = await connectTestRedis();
  model = await startScriptedModelServer({ script: [] });
});
afterAll(async () => {
  await model.close();
  redis.disconnect();
});

describe('checkReadiness', () => {
  it('is ready when Redis and the model server answer', async () => {
    const report = await checkReadiness({ redis, modelUrl: model.url, modelApiKey: null });
    expect(report).toEqual({ ready: true, checks: { redis: { ok: true }, model: { ok: true } } });
  });

  it('requires the model server by default (the worker), and only reports it for serve', async () => {
    const modelUrl = `http://127.0.0.1:${await closedPort()}/v1`;
    const worker = await checkReadiness({ redis, modelUrl, modelApiKey: null });
    expect(worker.ready).toBe(false);
    expect(worker.checks.model?.ok).toBe(false);

    const serve = await checkReadiness({ redis, modelUrl, modelApiKey: null, modelRequired: false });
    expect(serve.ready).toBe(true);
    expect(serve.checks.model).toMatchObject({ ok: false, required: false });
  });

  it('is not ready while draining', async () => {
    const report = await checkReadiness({ redis, modelUrl: model.url, modelApiKey: null, draining: true });
    expect(report.ready).toBe(false);
    expect(report.checks.draining).toEqual({ ok: false, detail: 'shutting down' });
  });
});
