import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIssueFetcher } from '../../../src/eval/issue-text.js';
import { createSilentLogger } from '../../../src/observability/logger.js';

// A loopback HTTP server answering GitHub's "get an issue" endpoint.
describe('createIssueFetcher', () => {
  let server: Server;
  let apiUrl: string;
  const seen: Array<{ url: string; auth: string | undefined; method: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? '', auth: req.headers.authorization, method: req.method ?? '' });
      if (req.url === '/api/v3/repos/acme/calc/issues/12') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ number: 12, title: 'mean() crashes', body: 'On an empty list.' }));
      } else {
        res.statusCode = 404;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ message: 'Not Found' }));
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3/`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('reads the title and body of the issue with the token, read only', async () => {
    const fetchIssue = createIssueFetcher({
      apiUrl,
      repo: 'acme/calc',
      token: 'tok-1',
      logger: createSilentLogger(),
    });
    expect(await fetchIssue(12)).toBe('mean() crashes\n\nOn an empty list.');
    expect(seen.at(-1)).toEqual({
      url: '/api/v3/repos/acme/calc/issues/12',
      auth: 'token tok-1',
      method: 'GET',
    });
  });

  it('gives null for an issue it cannot read, and for an unreachable server', async () => {
    const fetchIssue = createIssueFetcher({ apiUrl, repo: 'acme/calc', logger: createSilentLogger() });
    expect(await fetchIssue(99)).toBeNull();
    const unreachable = createIssueFetcher({
      apiUrl: 'http://127.0.0.1:9/api/v3',
      repo: 'acme/calc',
      logger: createSilentLogger(),
    });
    expect(await unreachable(12)).toBeNull();
  });
});
