import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminPolicy } from '../../../src/config/policy.js';
import { createStaticPolicyStore } from '../../../src/config/policy-store.js';
import { parseRepoConfig, type LoadedRepoConfigs } from '../../../src/config/repo-config.js';
import { createAdminRouter } from '../../../src/github-app/admin-routes.js';
import { connectTestRedis } from '../../integration/queue/redis-helper.js';

/**
 * The admin views behind HTTP Basic auth, served by a real express server on 127.0.0.1:0, with a
 * real BullMQ queue on Redis (127.0.0.1:6379) behind Bull Board.
 */
const REDIS = { host: '127.0.0.1', port: 6379 };
const USER = 'admin';
const PASSWORD = 'correct horse battery staple';
const queueName = `admin-routes-${randomUUID()}`;
const bullPrefix = `frognano-test:{admin-${randomUUID()}}`;

let queue: Queue;
const servers: Server[] = [];

async function start(options: Partial<Parameters<typeof createAdminRouter>[0]> = {}): Promise<string> {
  const app = express();
  app.use(
    '/admin',
    createAdminRouter({
      queues: [queue],
      policyStore: createStaticPolicyStore(
        parseAdminPolicy(
          'defaults:\n  maxSteps: 50\nrules:\n  - match: acme/*\n    candidates: 1\n',
          'policy.yaml',
        ),
      ),
      adminUser: USER,
      adminPassword: PASSWORD,
      ...options,
    }),
  );
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const basic = (user: string, password: string): Record<string, string> => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

beforeAll(async () => {
  // Fails with how to start Redis when it is not reachable.
  (await connectTestRedis()).disconnect();
  queue = new Queue(queueName, { connection: REDIS, prefix: bullPrefix });
  await queue.add('job', { hello: 'world' });
});
afterAll(async () => {
  for (const s of servers) await new Promise<void>((resolve) => s.close(() => resolve()));
  await queue.obliterate({ force: true });
  await queue.close();
});

describe('admin routes', () => {
  it('answer 401 with WWW-Authenticate without credentials or with wrong ones', async () => {
    const base = await start();
    for (const path of ['/admin/queues', '/admin/queues/api/queues', '/admin/policy?repo=acme/widgets']) {
      const none = await fetch(base + path);
      expect(none.status, path).toBe(401);
      expect(none.headers.get('www-authenticate')).toBe('Basic realm="frognano-bot admin", charset="UTF-8"');
      const wrong = await fetch(base + path, { headers: basic(USER, 'guess') });
      expect(wrong.status, path).toBe(401);
      const wrongUser = await fetch(base + path, { headers: basic('root', PASSWORD) });
      expect(wrongUser.status, path).toBe(401);
    }
  });

  it('serve Bull Board with credentials', async () => {
    const base = await start();
    const page = await fetch(`${base}/admin/queues`, { headers: basic(USER, PASSWORD) });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('<base href="/admin/queues/" />');
    // Static assets are served under the same path, behind the same credentials.
    const css = /href="(static\/css\/[^"]+)"/.exec(html)?.[1];
    expect(css).toBeDefined();
    expect((await fetch(`${base}/admin/queues/${css}`, { headers: basic(USER, PASSWORD) })).status).toBe(200);
    expect((await fetch(`${base}/admin/queues/${css}`)).status).toBe(401);
    const api = await fetch(`${base}/admin/queues/api/queues`, { headers: basic(USER, PASSWORD) });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: { name: string; counts: Record<string, number> }[] };
    expect(body.queues.map((q) => q.name)).toEqual([queueName]);
    expect(body.queues[0]?.counts.waiting).toBe(1);
  });

  it('serve Bull Board from this server only: no external fonts, a self-only CSP', async () => {
    const base = await start();
    const page = await fetch(`${base}/admin/queues`, { headers: basic(USER, PASSWORD) });
    const html = await page.text();
    expect(html).not.toMatch(/fonts\.(googleapis|gstatic)\.com/);
    // Every URL the page loads is relative to its <base>, i.e. this server.
    const urls = [...html.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]!);
    expect(urls.length).toBeGreaterThan(3);
    for (const url of urls) expect(url, url).not.toMatch(/^(https?:)?\/\//);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("font-src 'self'");
  });

  it('keep Bull Board read-only by default: no actions in the UI config or through the API', async () => {
    const base = await start();
    const api = (await (
      await fetch(`${base}/admin/queues/api/queues`, { headers: basic(USER, PASSWORD) })
    ).json()) as { queues: { readOnlyMode: boolean; allowRetries: boolean }[] };
    expect(api.queues[0]).toMatchObject({ readOnlyMode: true, allowRetries: false });
    for (const [method, path] of [
      ['PUT', `/admin/queues/api/queues/${queueName}/clean/waiting`],
      ['PUT', `/admin/queues/api/queues/${queueName}/retry/failed`],
      ['POST', `/admin/queues/api/queues/${queueName}/add`],
      ['PUT', `/admin/queues/api/queues/${queueName}/pause`],
    ] as const) {
      const res = await fetch(base + path, { method, headers: basic(USER, PASSWORD) });
      expect(res.status, path).toBe(405);
      expect(await res.text()).toContain('ADMIN_ACTIONS=true');
    }
    expect(await queue.getWaitingCount()).toBe(1);

    // With actions enabled, the admin may pause the queue (and resume it).
    const open = await start({ readOnly: false });
    const paused = await fetch(`${open}/admin/queues/api/queues/${queueName}/pause`, {
      method: 'PUT',
      headers: basic(USER, PASSWORD),
    });
    expect(paused.status).toBe(200);
    expect(await queue.isPaused()).toBe(true);
    await queue.resume();
  });

  it('show the effective policy of a repository with the source of each value', async () => {
    const loaded: LoadedRepoConfigs = {
      repoConfig: parseRepoConfig('maxSteps: 120\ntestCommand: make test\n', '.github/frognano.yml'),
      errors: [],
    };
    const asked: string[] = [];
    const base = await start({
      loadRepoConfigs: async (owner, name) => {
        asked.push(`${owner}/${name}`);
        return loaded;
      },
    });
    const res = await fetch(`${base}/admin/policy?repo=acme/widgets`, { headers: basic(USER, PASSWORD) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(asked).toEqual(['acme/widgets']);
    expect(body).toMatchObject({
      repo: 'acme/widgets',
      policyFile: null,
      policyReloadError: null,
      repositoryConfig: { read: true, org: null, repo: '.github/frognano.yml', errors: [] },
      effective: { maxSteps: 50, candidates: 1, testCommand: 'make test', enabled: true },
      sources: {
        maxSteps: 'policy:defaults',
        candidates: 'policy:rule[0] (acme/*)',
        testCommand: 'repo',
        label: 'default',
      },
      clamps: [
        {
          key: 'maxSteps',
          requested: 120,
          applied: 50,
          cap: 50,
          source: '.github/frognano.yml',
          capSource: 'policy:defaults',
        },
      ],
    });
  });

  it('show the admin layers only when repository configuration cannot be read here, and 400 without ?repo', async () => {
    const base = await start();
    const res = await fetch(`${base}/admin/policy?repo=other/thing`, { headers: basic(USER, PASSWORD) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      repositoryConfig: { read: false },
      effective: { maxSteps: 50, candidates: 1 },
      sources: { candidates: 'default' },
    });
    const bad = await fetch(`${base}/admin/policy`, { headers: basic(USER, PASSWORD) });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'add ?repo=owner/name (a repository full name)' });
    const evil = await fetch(`${base}/admin/policy?repo=${encodeURIComponent('../../etc')}`, {
      headers: basic(USER, PASSWORD),
    });
    expect(evil.status).toBe(400);
  });

  it('answer 502 with the reason when reading the repository configuration fails', async () => {
    const base = await start({
      loadRepoConfigs: async () => {
        throw new Error('installation not found');
      },
    });
    const res = await fetch(`${base}/admin/policy?repo=acme/widgets`, { headers: basic(USER, PASSWORD) });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({
      error: 'cannot read the repository configuration of acme/widgets: installation not found',
      code: 'INTERNAL',
    });
  });

  it('are never open: without configured credentials every route answers 403 with how to enable them', async () => {
    for (const creds of [
      { adminUser: undefined, adminPassword: undefined },
      { adminUser: USER, adminPassword: '' },
    ]) {
      const base = await start(creds);
      for (const path of ['/admin/queues', '/admin/policy?repo=acme/widgets']) {
        const res = await fetch(base + path, { headers: basic(USER, '') });
        expect(res.status, path).toBe(403);
        expect(await res.text()).toContain('set ADMIN_USER and ADMIN_PASSWORD');
      }
    }
  });
});
