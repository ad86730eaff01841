import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { createProbotApp } from '../../../src/github-app/github-client.js';
import { createLogger } from '../../../src/observability/logger.js';

/** A logger writing into an array of raw lines (raw: JSON.parse would hide a repeated key). */
function capture(format?: 'json' | 'pretty') {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ level: 'debug', format, destination });
  return { logger, lines };
}

const keyCount = (line: string, key: string) => line.split(`"${key}":`).length - 1;

describe('createLogger', () => {
  it('writes one `name` per line: Probot and Octokit children become `component`', async () => {
    const { logger, lines } = capture();
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const probot = createProbotApp({
      appId: 1,
      privateKey: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
      webhookSecret: 'a-webhook-secret',
      githubApiUrl: 'http://127.0.0.1:9/api/v3',
      logger,
      throttle: false,
    });
    probot.log.info('from probot');
    (await probot.auth()).log.info('from its octokit');
    logger.child({ name: 'setup' }).child({ jobId: '7' }).child({ name: 'step' }).info('nested');

    expect(lines).toHaveLength(3);
    for (const line of lines) expect(keyCount(line, 'name'), line).toBe(1);
    const parsed = lines.map((l) => JSON.parse(l) as { name: string; component: string; jobId?: string });
    expect(parsed.map((p) => p.name)).toEqual(['frognano-bot', 'frognano-bot', 'frognano-bot']);
    expect(parsed[0]!.component).toBe('probot');
    expect(parsed[1]!.component).toMatch(/^probot\/.+/);
    expect(parsed[2]).toMatchObject({ component: 'setup/step', jobId: '7' });
  });

  it('serialises errors with pino’s standard serializer: type, message, stack, the cause chain once', () => {
    const { logger, lines } = capture();
    const err = new AppError('GIT_FAILED', 'clone failed', { cause: new Error('connection reset') });
    logger.error({ err }, 'job failed');
    logger.warn({ err: 'a plain string' }, 'legacy call');

    const line = JSON.parse(lines[0]!) as {
      err: { type: string; message: string; stack: string; code: string };
    };
    expect(line.err.type).toBe('AppError');
    expect(line.err.code).toBe('GIT_FAILED');
    expect(line.err.message).toBe('clone failed: connection reset');
    expect(line.err.stack).toContain('AppError: clone failed');
    expect(line.err.stack.split('caused by: Error: connection reset')).toHaveLength(2);
    expect(lines[0]).not.toContain('"type":"Object"');
    expect(JSON.parse(lines[1]!)).toMatchObject({ err: { message: 'a plain string' } });
  });

  it('keeps the status, method and URL of an Octokit error, not its request and response bodies', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'Resource not accessible', token: 'ghs_from_the_response' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { logger, lines } = capture();
    try {
      const { Octokit } = await import('@octokit/rest');
      const octokit = new Octokit({
        auth: 'ghs_installation_token_value',
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      });
      const err = await octokit
        .request('POST /repos/{owner}/{repo}/issues', {
          owner: 'acme',
          repo: 'widgets',
          title: 'secret issue body',
        })
        .catch((e: unknown) => e);
      logger.warn({ err }, 'could not open the issue');
    } finally {
      server.close();
    }
    expect(lines[0]).not.toContain('ghs_');
    expect(keyCount(lines[0]!, 'name')).toBe(1);
    expect(lines[0]).not.toContain('secret issue body');
    const line = JSON.parse(lines[0]!) as { err: Record<string, unknown> };
    expect(line.err).toMatchObject({
      type: 'RequestError',
      status: 403,
      request: { method: 'POST', url: expect.stringMatching(/\/repos\/acme\/widgets\/issues$/) },
    });
    expect(line.err.response).toBeUndefined();
  });

  it('writes human-readable lines with LOG_FORMAT=pretty', () => {
    const { logger, lines } = capture('pretty');
    logger.child({ name: 'probot' }).info({ jobId: 'j1' }, 'worker started');
    const text = lines.join('\n');
    expect(text).toMatch(/INFO.*frognano-bot.*worker started/);
    expect(text).toContain('jobId: "j1"');
    expect(text).not.toContain('{"level"');
  });
});
