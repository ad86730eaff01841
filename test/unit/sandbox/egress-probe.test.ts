import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { assertEgressBlocked, egressEndpoint, probeEgress } from '../../../src/sandbox/egress-probe.js';
import type { ExecOptions, ExecResult, Sandbox } from '../../../src/sandbox/sandbox.js';

/** A stand-in sandbox whose exec returns a scripted result and records the command. */
function scriptedSandbox(
  result: Partial<ExecResult>,
): Sandbox & { calls: { command: readonly string[] | string; options?: ExecOptions }[] } {
  const calls: { command: readonly string[] | string; options?: ExecOptions }[] = [];
  const unused = (): never => {
    throw new Error('not used');
  };
  return {
    driver: 'scripted',
    workdir: '/w',
    calls,
    exec: async (command, options) => {
      calls.push({ command, options });
      return {
        stdout: Buffer.alloc(0),
        stderr: Buffer.alloc(0),
        exitCode: 0,
        signal: null,
        timedOut: false,
        outputTruncated: false,
        durationMs: 1,
        ...result,
      };
    },
    readFile: unused,
    writeFile: unused,
    list: unused,
    findFiles: unused,
    copyIn: unused,
    destroy: async () => undefined,
  };
}

describe('egressEndpoint', () => {
  it('takes host and port from the URL, with scheme defaults', () => {
    expect(egressEndpoint({ name: 'a', url: 'https://ghe.example.com/api/v3' })).toEqual({
      host: 'ghe.example.com',
      port: 443,
    });
    expect(egressEndpoint({ name: 'b', url: 'http://10.0.0.5:30000/v1' })).toEqual({
      host: '10.0.0.5',
      port: 30000,
    });
    expect(egressEndpoint({ name: 'c', url: 'http://model' })).toEqual({ host: 'model', port: 80 });
    expect(egressEndpoint({ name: 'd', url: 'http://[::1]:8080' })).toEqual({ host: '::1', port: 8080 });
    expect(egressEndpoint({ name: 'redis', url: 'redis://queue.internal' })).toEqual({
      host: 'queue.internal',
      port: 6379,
    });
  });

  it('refuses a URL it cannot probe', () => {
    expect(() => egressEndpoint({ name: 'x', url: 'not a url' })).toThrow(/invalid URL/);
    expect(() => egressEndpoint({ name: 'y', url: 'ftp://files.example.com' })).toThrow(/explicit port/);
  });
});

describe('probeEgress', () => {
  const targets = [
    { name: 'github', url: 'https://ghe.example.com' },
    { name: 'model-server', url: 'http://model:30000' },
  ];

  it('passes hosts and ports as arguments, not inside the script', async () => {
    const sb = scriptedSandbox({
      stdout: Buffer.from('frognano-egress-probe-start\nfrognano-egress-probe-done\n'),
    });
    expect(await probeEgress(sb, targets, { timeoutMs: 1234, resolve: async () => [] })).toEqual({
      blocked: true,
      reached: [],
    });
    const call = sb.calls[0];
    expect(Array.isArray(call?.command)).toBe(true);
    expect((call?.command as string[]).slice(3)).toEqual([
      'egress-probe',
      'ghe.example.com',
      '443',
      'model',
      '30000',
    ]);
    expect((call?.command as string[])[2]).not.toContain('ghe.example.com');
    expect(call?.options?.timeoutMs).toBe(1234);
  });

  it('names the targets that were reached, also when the probe timed out', async () => {
    const sb = scriptedSandbox({
      stdout: Buffer.from('frognano-egress-probe-start\nreached 1\n'),
      timedOut: true,
      exitCode: null,
      signal: 'SIGKILL',
    });
    const resolve = async (): Promise<string[]> => [];
    expect(await probeEgress(sb, targets, { resolve })).toEqual({
      blocked: false,
      reached: ['model-server'],
    });
    const err = await assertEgressBlocked(sb, targets, { resolve }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAppError(err, 'EGRESS_NOT_BLOCKED')).toBe(true);
    expect((err as Error).message).toBe(
      'the sandbox is not offline: from inside the sandbox a TCP connection reached model-server',
    );
  });

  it('probes the addresses the worker resolves a name to as well, and names the target', async () => {
    const sb = scriptedSandbox({
      // Probe 3 is model's first address: the name did not resolve inside, the address answered.
      stdout: Buffer.from('frognano-egress-probe-start\nreached 3\nfrognano-egress-probe-done\n'),
    });
    const resolve = async (host: string): Promise<string[]> =>
      host === 'model' ? ['10.0.0.7', '10.0.0.8'] : ['192.0.2.1'];
    expect(await probeEgress(sb, targets, { resolve })).toEqual({
      blocked: false,
      reached: ['model-server'],
    });
    expect((sb.calls[0]?.command as string[]).slice(4)).toEqual([
      'ghe.example.com',
      '443',
      '192.0.2.1',
      '443',
      'model',
      '30000',
      '10.0.0.7',
      '30000',
      '10.0.0.8',
      '30000',
    ]);
  });

  it('does not take a probe that never ran for "blocked"', async () => {
    const sb = scriptedSandbox({ exitCode: 127, stderr: Buffer.from('bash: not found') });
    const err = await probeEgress(sb, targets).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAppError(err, 'EGRESS_PROBE_FAILED')).toBe(true);
  });
});
