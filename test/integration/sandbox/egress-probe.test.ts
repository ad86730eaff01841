import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { assertEgressBlocked, probeEgress } from '../../../src/sandbox/egress-probe.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';

describe('egress probe on the local sandbox', () => {
  let server: net.Server;
  let url: string;
  const sandboxes: Sandbox[] = [];

  beforeAll(async () => {
    server = net.createServer((socket) => {
      socket.on('error', () => undefined); // the probe closes at once: a reset is expected
      socket.end('hello\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const sb of sandboxes) await sb.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('finds a TCP server of the host unreachable from the sandbox', async () => {
    const sb = await createLocalSandboxFactory().create({ jobId: 'egress-offline' });
    sandboxes.push(sb);
    const targets = [
      { name: 'host-server', url },
      { name: 'github', url: 'https://github.invalid' },
    ];
    expect(await probeEgress(sb, targets, { timeoutMs: 3_000 })).toEqual({ blocked: true, reached: [] });
    await assertEgressBlocked(sb, targets, { timeoutMs: 3_000 });
  });

  it('refuses a sandbox that can reach out', async () => {
    const sb = await createLocalSandboxFactory({ shareNetwork: true }).create({ jobId: 'egress-online' });
    sandboxes.push(sb);
    const targets = [
      { name: 'model-server', url },
      { name: 'closed-port', url: 'http://127.0.0.1:1' },
    ];
    expect(await probeEgress(sb, targets, { timeoutMs: 3_000 })).toEqual({
      blocked: false,
      reached: ['model-server'],
    });
    const err = await assertEgressBlocked(sb, targets, { timeoutMs: 3_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAppError(err, 'EGRESS_NOT_BLOCKED')).toBe(true);
    expect((err as Error).message).toContain('the sandbox is not offline');
    expect((err as Error).message).toContain('model-server');
  });
});
