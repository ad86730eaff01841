import { describe, expect, it } from 'vitest';
import {
  distribution,
  passAtK,
  summarizeResults,
  wilsonInterval,
} from '../../../src/eval/eval-statistics.js';
import type { TaskResult } from '../../../src/eval/results-store.js';

/** pass@k by its definition: 1 - C(n-c, k) / C(n, k), with exact binomials. */
function passAtKByDefinition(n: number, c: number, k: number): number {
  const choose = (a: number, b: number): number => {
    if (b < 0 || b > a) return 0;
    let r = 1;
    for (let i = 1; i <= b; i++) r = (r * (a - b + i)) / i;
    return r;
  };
  return 1 - choose(n - c, k) / choose(n, k);
}

describe('passAtK (Chen et al. 2021)', () => {
  it('equals the binomial definition', () => {
    for (const [n, c, k] of [
      [10, 3, 1],
      [10, 3, 5],
      [5, 0, 2],
      [20, 19, 2],
      [7, 7, 7],
      [3, 1, 3],
    ] as const) {
      expect(passAtK(n, c, k)).toBeCloseTo(passAtKByDefinition(n, c, k), 12);
    }
  });
  it('is c/n for k = 1, 1 when every k-subset has a correct sample, 0 with no correct sample', () => {
    expect(passAtK(4, 1, 1)).toBeCloseTo(0.25, 12);
    expect(passAtK(4, 3, 2)).toBe(1);
    expect(passAtK(4, 0, 4)).toBe(0);
  });
  it('refuses impossible arguments', () => {
    expect(() => passAtK(3, 1, 4)).toThrow(RangeError);
    expect(() => passAtK(3, 4, 1)).toThrow(RangeError);
  });
});

describe('wilsonInterval', () => {
  it('matches published values', () => {
    // 8 of 10 at 95%: 0.4902 .. 0.9433 (Wilson score interval, e.g. Newcombe 1998, method 3).
    const [lo, hi] = wilsonInterval(8, 10);
    expect(lo).toBeCloseTo(0.4902, 4);
    expect(hi).toBeCloseTo(0.9433, 4);
  });
  it('stays inside [0, 1] at the edges and is [0, 1] without data', () => {
    const [lo0, hi0] = wilsonInterval(0, 5);
    expect(lo0).toBe(0);
    expect(hi0).toBeCloseTo(0.4345, 4);
    expect(wilsonInterval(5, 5)[1]).toBe(1);
    expect(wilsonInterval(0, 0)).toEqual([0, 1]);
  });
});

describe('distribution', () => {
  it('gives median, nearest-rank 90th percentile, mean and max', () => {
    expect(distribution([5, 1, 3, 2, 4, 6, 7, 8, 9, 10])).toEqual({
      median: 5.5,
      p90: 9,
      mean: 5.5,
      max: 10,
    });
    expect(distribution([])).toEqual({ median: 0, p90: 0, mean: 0, max: 0 });
  });
});

const candidate = (k: number, resolved: boolean, exitReason = 'agent') => ({
  k,
  exitReason,
  steps: 10 * k,
  tokens: { prompt: 100, completion: 10 },
  durationMs: 1000,
  resolved,
  reason: resolved ? null : 'x',
});

describe('summarizeResults', () => {
  it('counts the best-of-N choice as resolved, and pass@1 / pass@k over the candidates', () => {
    const results: TaskResult[] = [
      {
        instance_id: 'a',
        model: 'm',
        candidates: [candidate(1, false), candidate(2, true)],
        chosen: 2,
        modelPatch: 'p',
        durationMs: 4000,
      },
      {
        instance_id: 'b',
        model: 'm',
        candidates: [candidate(1, true), candidate(2, false, 'max_steps')],
        chosen: 2,
        modelPatch: 'p',
        durationMs: 2000,
      },
      {
        instance_id: 'c',
        model: 'm',
        candidates: [],
        chosen: null,
        modelPatch: '',
        durationMs: 500,
        error: 'clone failed',
      },
    ];
    const s = summarizeResults(results);
    expect(s.tasks).toBe(3);
    expect(s.resolved).toBe(1);
    expect(s.resolvedRate).toBeCloseTo(1 / 3, 12);
    expect(s.resolvedRateCi95).toEqual(wilsonInterval(1, 3));
    expect(s.passAt1).toBeCloseTo((0.5 + 0.5 + 0) / 3, 12);
    expect(s.passAtK).toEqual({ k: 2, value: 1 });
    expect(s.bestOfN).toEqual({ choiceRate: s.resolvedRate, passAtK: 1 });
    expect(s.exitReasons).toEqual({ agent: 3, max_steps: 1 });
    expect(s.errors).toBe(1);
    expect(s.perTask[0]).toEqual({
      instance_id: 'a',
      resolved: true,
      candidatesResolved: 1,
      candidates: 2,
      steps: 30,
      tokens: 220,
      seconds: 4,
    });
    expect(s.secondsPerTask.max).toBe(4);
  });
});
