/**
 * Latency figures of `npm run bench`: nearest-rank percentiles of a sample and one printed row in
 * the style of bench/run.ts (`name  median x ms   p95 y ms   p99 z ms   budget …`).
 */

/** Summary of latency samples; every figure in milliseconds. */
export interface LatencyStats {
  /** Number of samples. */
  n: number;
  median: number;
  p95: number;
  p99: number;
  max: number;
}

/**
 * Nearest-rank percentiles (the smallest sample with at least q·n samples at or below it) of
 * `samplesMs`. An empty sample gives NaN everywhere.
 */
export function latencyStats(samplesMs: readonly number[]): LatencyStats {
  const s = [...samplesMs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
  return { n: s.length, median: at(0.5), p95: at(0.95), p99: at(0.99), max: s[s.length - 1] ?? NaN };
}

/** Print one row: name, median, p95, p99 (ms, two decimals) and the budget text. */
export function printLatencyRow(name: string, s: LatencyStats, budget: string): void {
  const ms = (v: number) => `${v.toFixed(2).padStart(7)} ms`;
  console.log(
    `${name.padEnd(34)} median ${ms(s.median)}   p95 ${ms(s.p95)}   p99 ${ms(s.p99)}   ${budget}`.trimEnd(),
  );
}
