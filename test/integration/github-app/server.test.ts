import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AppEnv } from '../../../src/config/env.js';
import { STATUS_MARKER } from '../../../src/github-app/status-comment.js';
import { NOTICE_MARKER } from '../../../src/github-app/issues-labeled.js';
import { startServer, type RunningServer } from '../../../src/github-app/server.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import type { GheStandin } from '../../helpers/ghe-standin/index.js';
import { startWebhookFixture, type WebhookFixture } from '../../helpers/webhook-fixture.js';
import { closedPort, deletePrefix, uniquePrefix, waitFor } from '../queue/redis-helper.js';

const OWNER = 'octo-org';
const REPO = 'calc';

let fixture: WebhookFixture;
let ghe: GheStandin;
let prefix: string;
let server: RunningServer;

function envFor(overrides: Record<string, string> = {}): AppEnv {
  return fixture.envFor(prefix, { SHUTDOWN_TIMEOUT_MS: '2000', ...overrides });
}

/** Start `serve` on this test's queue (replacing the one of `beforeEach` when a test needs other settings). */
function startTestServer(
  overrides: Record<string, string> = {},
  options: { redisReadyTimeoutMs?: number } = {},
): Promise<RunningServer> {
  return startServer({
    env: envFor(overrides),
    logger: createSilentLogger(),
    port: 0,
    host: '127.0.0.1',
    ...options,
  });
}

async function jobCounts(): Promise<Record<string, number>> {
  return server.jobs.queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized');
}

function total(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

beforeAll(async () => {
  fixture = await startWebhookFixture({
    owner: OWNER,
    repo: REPO,
    roles: { alice: 'write', rita: 'read', trish: 'triage' },
  });
  ghe = fixture.ghe;
});

afterAll(async () => {
  await fixture?.close();
});

beforeEach(async () => {
  prefix = uniquePrefix('serve');
  server = await startTestServer();
});

afterEach(async () => {
  await server.close();
  await deletePrefix(fixture.redis, prefix);
  expect(ghe.state.errors).toEqual([]);
  expect(ghe.state.unhandled).toEqual([]);
});

/** Send a signed delivery and wait until its queued GitHub side (the intake step) has run. */
async function send(...args: Parameters<GheStandin['sendWebhook']> extends [string, ...infer R] ? R : never) {
  const res = await ghe.sendWebhook(server.webhookUrl, ...args);
  await server.intake.idle();
  return res;
}

function newIssue(title = 'add() returns the wrong sum'): number {
  return ghe.createIssue(OWNER, REPO, { title, body: 'add(2, 2) gives 5', user: 'alice' }).number;
}

describe('serve: webhook route', () => {
  it('refuses a bad signature with 401 and queues nothing', async () => {
    const n = newIssue();
    const payload = fixture.labeled(n, 'alice');
    const res = await send('issues', payload, { secret: 'not-the-secret' });
    expect(res.status).toBe(401);
    expect(total(await jobCounts())).toBe(0);
    expect(ghe.state.comments(OWNER, REPO, n)).toEqual([]);
    expect(ghe.state.requestsTo('GET', /collaborators/)).toEqual([]);

    const unsigned = await fetch(server.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': 'x' },
      body: JSON.stringify(payload),
    });
    expect(unsigned.status).toBe(401);
    expect(total(await jobCounts())).toBe(0);
  });

  it('queues a job for a writer: status comment "queued (position 1)", 👀, job data validated', async () => {
    const n = newIssue();
    const payload = fixture.labeled(n, 'alice');
    const res = await send('issues', payload, { deliveryId: 'd-1111' });
    expect(res.status).toBe(200);

    const jobs = await server.jobs.queue.getJobs(['waiting']);
    expect(jobs).toHaveLength(1);
    const job = jobs[0]!;
    expect(job.data).toMatchObject({
      version: 1,
      deliveryId: 'd-1111',
      installationId: ghe.installationId,
      owner: OWNER,
      repo: REPO,
      issueNumber: n,
      label: 'frognano',
      triggeredBy: { login: 'alice' },
    });
    const comments = ghe.state.comments(OWNER, REPO, n);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(STATUS_MARKER);
    expect(comments[0]!.body).toContain('queued (position 1)');
    expect(comments[0]!.user?.login).toBe(ghe.botLogin);
    expect(job.data.statusCommentId).toBe(comments[0]!.id);
    expect(ghe.state.reactions.filter((r) => r.content === 'eyes')).toHaveLength(1);
    // Permission came from the API, not from the payload.
    expect(ghe.state.requestsTo('GET', /\/collaborators\/alice\/permission$/)).toHaveLength(1);
  });

  it('answers a read-only or triage sender with a comment and queues nothing', async () => {
    for (const sender of ['rita', 'trish', 'stranger']) {
      const n = newIssue();
      const payload = fixture.labeled(n, sender);
      const res = await send('issues', payload);
      expect(res.status).toBe(200);
      const comments = ghe.state.comments(OWNER, REPO, n);
      expect(comments).toHaveLength(1);
      expect(comments[0]!.body).toContain(NOTICE_MARKER);
      expect(comments[0]!.body).toContain(`@${sender} needs write, maintain or admin access`);
    }
    expect(total(await jobCounts())).toBe(0);
  });

  it('creates one job when the same delivery arrives twice', async () => {
    const n = newIssue();
    const payload = fixture.labeled(n, 'alice');
    const first = await send('issues', payload, { deliveryId: 'dup-1' });
    const second = await send('issues', payload, { deliveryId: 'dup-1' });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(total(await jobCounts())).toBe(1);
    expect(ghe.state.comments(OWNER, REPO, n)).toHaveLength(1);

    // Both at once: still one job.
    const m = newIssue();
    const p2 = fixture.labeled(m, 'alice');
    const both = await Promise.all([
      send('issues', p2, { deliveryId: 'dup-2' }),
      send('issues', p2, { deliveryId: 'dup-2' }),
    ]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    expect(total(await jobCounts())).toBe(2);
    expect(ghe.state.comments(OWNER, REPO, m).filter((c) => c.body?.includes(STATUS_MARKER))).toHaveLength(1);
  });

  it('says so when a job for the issue is already queued (a new delivery)', async () => {
    const n = newIssue();
    const payload = fixture.labeled(n, 'alice');
    await send('issues', payload, { deliveryId: 'busy-1' });
    const res = await send('issues', payload, { deliveryId: 'busy-2' });
    expect(res.status).toBe(200);
    expect(total(await jobCounts())).toBe(1);
    const notices = ghe.state.comments(OWNER, REPO, n).filter((c) => c.body?.includes(NOTICE_MARKER));
    expect(notices).toHaveLength(1);
    expect(notices[0]!.body).toContain('already queued');
  });

  it('ignores other labels and bot senders without a word; refuses closed issues', async () => {
    const n = newIssue();
    const other = fixture.labeled(n, 'alice', 'bug');
    expect((await send('issues', other)).status).toBe(200);
    const byBot = ghe.makeIssuesLabeledPayload({
      owner: OWNER,
      repo: REPO,
      issueNumber: n,
      sender: ghe.botLogin,
      label: 'frognano',
    });
    (byBot.sender as { type: string }).type = 'Bot';
    expect((await send('issues', byBot)).status).toBe(200);
    expect(ghe.state.comments(OWNER, REPO, n)).toEqual([]);

    const closed = newIssue();
    ghe.closeIssue({ owner: OWNER, repo: REPO, issueNumber: closed, sender: 'alice' });
    const onClosed = fixture.labeled(closed, 'alice');
    expect((await send('issues', onClosed)).status).toBe(200);
    expect(ghe.state.comments(OWNER, REPO, closed)[0]?.body).toContain('the issue is closed');
    expect(total(await jobCounts())).toBe(0);
  });

  it('removes a waiting job when the label is removed, and says who cancelled in the status comment', async () => {
    const n = newIssue();
    const labeled = fixture.labeled(n, 'alice');
    await send('issues', labeled);
    expect(total(await jobCounts())).toBe(1);

    const unlabeled = ghe.unlabelIssue({
      owner: OWNER,
      repo: REPO,
      issueNumber: n,
      sender: 'trish',
      label: 'frognano',
    });
    const res = await send('issues', unlabeled);
    expect(res.status).toBe(200);
    expect(total(await jobCounts())).toBe(0);
    const comments = ghe.state.comments(OWNER, REPO, n);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain('cancelled by @trish');
    expect(comments[0]!.body).toContain('the frognano label was removed before the job started');
    expect(ghe.state.commentBodies(comments[0]!.id)).toHaveLength(2);

    // Labelling again afterwards starts a new job, in the same status comment.
    const again = fixture.labeled(n, 'alice');
    expect((await send('issues', again)).status).toBe(200);
    expect(total(await jobCounts())).toBe(1);
    expect(ghe.state.comments(OWNER, REPO, n)).toHaveLength(1);
    expect(ghe.state.comments(OWNER, REPO, n)[0]!.body).toContain('queued (position 1)');

    // Closing the issue cancels too.
    const closed = ghe.closeIssue({ owner: OWNER, repo: REPO, issueNumber: n, sender: 'alice' });
    expect((await send('issues', closed)).status).toBe(200);
    expect(total(await jobCounts())).toBe(0);
    expect(ghe.state.comments(OWNER, REPO, n)[0]!.body).toContain('the issue was closed');
  });

  it('serves /healthz, /readyz and /metrics', async () => {
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`${server.url}/readyz`);
    const body = (await ready.json()) as { ready: boolean; checks: Record<string, { ok: boolean }> };
    expect(ready.status).toBe(200);
    expect(body.checks.redis?.ok).toBe(true);
    expect(body.checks.model?.ok).toBe(true);
    expect(fixture.model.modelListRequests).toBeGreaterThan(0);

    const n = newIssue();
    await send('issues', fixture.labeled(n, 'alice'));
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/frognano_webhooks_total\{event="issues.labeled",result="queued"\} 1/);
    expect(metrics).toMatch(/frognano_queue_depth\{state="waiting"\} 1/);
  });

  it('stays ready when the model server does not answer, and reports it (webhooks are still queued)', async () => {
    await server.close();
    server = await startTestServer({ MODEL_URL: `http://127.0.0.1:${await closedPort()}/v1` });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as {
      ready: boolean;
      checks: Record<string, { ok: boolean; detail?: string; required?: boolean }>;
    };
    expect(body.ready).toBe(true);
    expect(body.checks.model).toMatchObject({ ok: false, required: false });
    expect(body.checks.model?.detail).toContain('/models failed');
    expect(body.checks.redis?.ok).toBe(true);
  });
});

/* eslint-disable @typescript-eslint/no-explicit-any -- payloads spoiled on purpose */
describe('serve: what a delivery must be (issue 12 item 8)', () => {
  /** POST a body signed with the webhook secret, with the given content type. */
  async function post(body: string, contentType: string, deliveryId = `raw-${Math.random()}`) {
    const res = await fetch(server.webhookUrl, {
      method: 'POST',
      headers: {
        'content-type': contentType,
        'x-github-event': 'issues',
        'x-github-delivery': deliveryId,
        'x-hub-signature-256': await sign(ghe.webhookSecret, body),
      },
      body,
    });
    const text = await res.text();
    await server.intake.idle();
    return { status: res.status, text };
  }

  it('accepts a form-encoded delivery (payload= field) as GitHub sends it', async () => {
    const n = newIssue();
    const body = new URLSearchParams({ payload: JSON.stringify(fixture.labeled(n, 'alice')) }).toString();
    const res = await post(body, 'application/x-www-form-urlencoded');
    expect(res.status).toBe(200);
    expect(total(await jobCounts())).toBe(1);
    expect(ghe.state.comments(OWNER, REPO, n)[0]?.body).toContain('queued (position 1)');
  });

  it('answers 415 saying to set the app to JSON for another content type', async () => {
    const res = await post(JSON.stringify(fixture.labeled(newIssue(), 'alice')), 'text/plain');
    expect(res.status).toBe(415);
    expect(res.text).toContain("set the GitHub App's webhook content type to application/json");
    expect(total(await jobCounts())).toBe(0);
  });

  it('answers 400 with the reason for a payload without installation or issue.title, or a huge issue number', async () => {
    const n = newIssue();
    const cases: Array<[(p: Record<string, any>) => void, string]> = [
      [(p) => delete p.installation, 'the payload has no installation'],
      [(p) => delete p.issue.title, 'the payload has no issue.title'],
      [(p) => (p.issue.number = 2 ** 53 + 2), 'issue.number is above 2^53 - 1'],
    ];
    for (const [spoil, reason] of cases) {
      const payload = structuredClone(fixture.labeled(n, 'alice')) as Record<string, any>;
      spoil(payload);
      const res = await post(JSON.stringify(payload), 'application/json');
      expect(res.status, reason).toBe(400);
      expect(JSON.parse(res.text)).toEqual({ error: reason });
    }
    expect(total(await jobCounts())).toBe(0);
    expect(ghe.state.comments(OWNER, REPO, n)).toEqual([]);
  });
});

describe('serve: GitHub not answering at start (issue 12 item 4)', () => {
  it('listens before the app lookup (GET /app) finishes', async () => {
    // A "GitHub" that accepts connections and never answers.
    const held: Socket[] = [];
    const silent = createNetServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      await server.close();
      const started = performance.now();
      server = await startTestServer({ GHE_HOST: `127.0.0.1:${port}`, GHE_PROTOCOL: 'http' });
      expect(performance.now() - started).toBeLessThan(2000);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      for (const s of held) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('serve: Redis unavailable', () => {
  it('answers 5xx and writes nothing on GitHub, so the delivery can be redelivered', async () => {
    await server.close();
    server = await startTestServer(
      { REDIS_URL: `redis://127.0.0.1:${await closedPort()}` },
      { redisReadyTimeoutMs: 200 },
    );
    const n = newIssue();
    const before = ghe.state.commentHistory.length;
    const payload = fixture.labeled(n, 'alice');
    const res = await ghe.sendWebhook(server.webhookUrl, 'issues', payload);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(res.status).toBeLessThan(600);
    expect(ghe.state.commentHistory.length).toBe(before);
    expect(
      ghe.state.reactions.filter((r) => r.subject.kind === 'issue' && r.subject.issueNumber === n),
    ).toEqual([]);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
  });
});

describe('serve: shutdown', () => {
  it('drains: close() resolves, the port stops accepting', async () => {
    const url = server.url;
    await server.close();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    await waitFor(() => server.redis.status === 'end', 'redis closed', 2000);
  });
});
