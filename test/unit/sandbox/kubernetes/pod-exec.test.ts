import { describe, expect, it } from 'vitest';
import { exitCodeFromStatus, OutputCollector } from '../../../../src/sandbox/kubernetes/pod-exec.js';

describe('exitCodeFromStatus', () => {
  it('reads Success as 0 and the ExitCode cause of NonZeroExitCode', () => {
    expect(exitCodeFromStatus({ status: 'Success' })).toBe(0);
    expect(
      exitCodeFromStatus({
        status: 'Failure',
        reason: 'NonZeroExitCode',
        message: 'command terminated with non-zero exit code: exit code 3',
        details: { causes: [{ reason: 'ExitCode', message: '3' }] },
      }),
    ).toBe(3);
  });

  it('has no exit code for other failures or a malformed cause', () => {
    expect(
      exitCodeFromStatus({ status: 'Failure', reason: 'InternalError', message: 'container not found' }),
    ).toBeNull();
    expect(
      exitCodeFromStatus({
        status: 'Failure',
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: 'x' }] },
      }),
    ).toBeNull();
    expect(exitCodeFromStatus({ status: 'Failure', reason: 'NonZeroExitCode' })).toBeNull();
  });
});

describe('OutputCollector', () => {
  it('keeps the head up to the cap, the tail always, and counts everything', () => {
    const c = new OutputCollector(10);
    c.push(Buffer.from('0123456'));
    c.push(Buffer.from('789abcdef'));
    c.push(Buffer.alloc(2000, 'z'));
    c.push(Buffer.from('END'));
    expect(c.total).toBe(7 + 9 + 2000 + 3);
    expect(c.head(1000).toString()).toBe('0123456789');
    expect(c.head(4).toString()).toBe('0123');
    expect(c.tail().toString().endsWith('zzzEND')).toBe(true);
    expect(c.tail().length).toBe(OutputCollector.TAIL_BYTES);
  });

  it('keeps small outputs whole in both head and tail', () => {
    const c = new OutputCollector(1 << 20);
    for (const part of ['a', 'b', 'c']) c.push(Buffer.from(part));
    expect([c.head(3).toString(), c.tail().toString(), c.total]).toEqual(['abc', 'abc', 3]);
  });
});
