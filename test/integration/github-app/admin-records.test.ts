/**
 * `/admin/records…`: the run record views behind the admin's HTTP Basic auth, read from a real
 * volume record store, served by a real express server on 127.0.0.1.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStaticPolicyStore } from '../../../src/config/policy-store.js';
import { createAdminRouter } from '../../../src/github-app/admin-routes.js';
import { createProcessChainLock } from '../../../src/observability/chain-lock.js';
import { appendEntry } from '../../../src/observability/record-chain.js';
import { createVolumeRecordStore } from '../../../src/observability/record-store.js';

const auth = {
  authorization: `Basic ${Buffer.from('admin:correct horse battery staple').toString('base64')}`,
};
let dir: string;
let server: Server;
let url: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frognano-admin-records-'));
  const store = createVolumeRecordStore({ dir });
  await store.put('jobs/o.r.1.d/files/trajectory.json', '{"steps":[]}');
  await appendEntry(store, createProcessChainLock(), 'o/r', {
    kind: 'record',
    jobId: 'o.r.1.d',
    body: { runId: 'x' },
  });
  const app = express();
  app.use(
    '/admin',
    createAdminRouter({
      queues: [],
      policyStore: createStaticPolicyStore(),
      adminUser: 'admin',
      adminPassword: 'correct horse battery staple',
      records: store,
    }),
  );
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/records`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await rm(dir, { recursive: true, force: true });
});

describe('/admin/records', () => {
  it('needs the admin credentials', async () => {
    expect((await fetch(`${url}/o.r.1.d`)).status).toBe(401);
  });

  it('shows a job’s entries and files, serves a file, and verifies a chain', async () => {
    const job = (await (await fetch(`${url}/o.r.1.d`, { headers: auth })).json()) as {
      entries: Array<{ kind: string; linked: boolean }>;
      files: string[];
    };
    expect(job.entries).toEqual([expect.objectContaining({ kind: 'record', linked: true, seq: 0 })]);
    expect(job.files).toEqual(['trajectory.json']);
    const file = await fetch(`${url}/o.r.1.d/files/trajectory.json`, { headers: auth });
    expect(await file.text()).toBe('{"steps":[]}');
    const chain = (await (await fetch(`${url}?repo=o/r`, { headers: auth })).json()) as {
      report: { broken: unknown; checked: number };
    };
    expect(chain.report).toMatchObject({ broken: null, checked: 1 });
  });

  it('answers 404 for an unknown job and 400 for a bad id', async () => {
    expect((await fetch(`${url}/o.r.2.d`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${url}/..%2Fetc`, { headers: auth })).status).toBe(400);
  });
});
