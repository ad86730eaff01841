import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { cloneRepository } from '../../../src/git/clone-repository.js';
import { gitAuthEnv, repositoryUrl } from '../../../src/git/git-auth.js';

const TOKEN = 'ghs_secretInstallationToken0123456789';

let server: Server;
let port: number;
let root: string;
const seen: Array<{ host: string | undefined; authorization: string | undefined }> = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'frognano-gitauth-'));
  // A server that records what git sends and refuses everything (the token's echo tests scrubbing).
  server = createServer((req, res) => {
    seen.push({ host: req.headers.host, authorization: req.headers.authorization });
    res.writeHead(403, { 'Content-Type': 'text/plain' });
    res.end(`denied for ${TOKEN}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(root, { recursive: true, force: true });
});

describe('git over HTTPS with the installation token', () => {
  it('sends Basic x-access-token:<token> to the configured host only, never in argv or the URL', async () => {
    const baseUrl = `http://127.0.0.1:${port}`;
    seen.length = 0;
    const err = await cloneRepository({
      url: repositoryUrl(baseUrl, 'acme', 'widgets'),
      dir: join(root, 'a'),
      branch: 'main',
      auth: { token: TOKEN, baseUrl },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('GITHUB_API_ERROR');
    expect(seen.length).toBeGreaterThan(0);
    const expected = `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`;
    expect(seen[0]?.authorization).toBe(expected);
    // What git was started with (argv, visible to `ps`) and what the error says carry no secret.
    const text = JSON.stringify({ message: (err as AppError).message, details: (err as AppError).details });
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(expected.slice(6));
    expect(text).toContain('/acme/widgets.git');
  });

  it('does not send the header to another host (a redirect or another server)', async () => {
    seen.length = 0;
    await cloneRepository({
      url: `http://localhost:${port}/acme/widgets.git`,
      dir: join(root, 'b'),
      branch: 'main',
      auth: { token: TOKEN, baseUrl: `http://127.0.0.1:${port}` },
    }).catch(() => undefined);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((r) => r.authorization === undefined)).toBe(true);
  });
});

describe('gitAuthEnv', () => {
  it('scopes the header to the server URL and lists the strings to redact', () => {
    const { env, secrets } = gitAuthEnv('tok', 'https://ghe.example.com/');
    expect(env).toEqual({
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.https://ghe.example.com/.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from('x-access-token:tok').toString('base64')}`,
    });
    expect(secrets).toEqual(['tok', Buffer.from('x-access-token:tok').toString('base64')]);
  });

  it('builds a credential-free repository URL', () => {
    expect(repositoryUrl('https://ghe.example.com', 'acme', 'widgets')).toBe(
      'https://ghe.example.com/acme/widgets.git',
    );
  });
});
