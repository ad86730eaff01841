import { describe, expect, it } from 'vitest';
import { createProgress } from '../../../src/eval/progress.js';

function fakeStream(isTTY: boolean) {
  const writes: string[] = [];
  return { stream: { isTTY, columns: 100, write: (t: string) => writes.push(t) }, writes };
}

describe('createProgress', () => {
  it('writes plain lines when not a TTY, with resolved so far and an ETA from this run', () => {
    let now = 0;
    const { stream, writes } = fakeStream(false);
    const p = createProgress(stream, 4, () => now);
    p.skipped(1, 1);
    now = 60_000;
    p.finished({ instanceId: 'a__b-1', resolved: true });
    now = 120_000;
    p.finished({ instanceId: 'a__b-2', resolved: false, note: '1 FAIL_TO_PASS test(s) fail' });
    p.done();
    expect(writes).toEqual([
      '[1/4] 1 task already finished in this folder, skipped\n',
      '[2/4] a__b-1: resolved; 2 resolved so far, ETA 2 min\n',
      '[3/4] a__b-2: not resolved (1 FAIL_TO_PASS test(s) fail); 2 resolved so far, ETA 1 min\n',
    ]);
  });

  it('redraws one line with a bar on a TTY and ends it with a newline', () => {
    let now = 0;
    const { stream, writes } = fakeStream(true);
    const p = createProgress(stream, 2, () => now);
    now = 30_000;
    p.finished({ instanceId: 'x', resolved: true });
    now = 60_000;
    p.finished({ instanceId: 'y', resolved: false });
    p.done();
    const clear = '\r\x1b[2K';
    expect(writes[0]).toBe(`${clear}[${'#'.repeat(20)}${'-'.repeat(20)}] 1/2 tasks, 1 resolved, ETA 30 s`);
    expect(writes[1]).toBe(`${clear}[${'#'.repeat(40)}] 2/2 tasks, 1 resolved, done`);
    expect(writes.at(-1)).toBe('\n');
    expect(writes.slice(0, -1).every((w) => !w.includes('\n'))).toBe(true);
  });

  it('says the ETA is unknown before a task of this run finished', () => {
    const { stream, writes } = fakeStream(false);
    createProgress(stream, 3, () => 0).skipped(1, 0);
    expect(writes[0]).toBe('[1/3] 1 task already finished in this folder, skipped\n');
    const p = createProgress(stream, 3, () => 0);
    p.skipped(2, 0);
    p.finished({ instanceId: 'z', resolved: false });
    expect(writes.at(-1)).toBe('[3/3] z: not resolved; 0 resolved so far, done\n');
  });
});
