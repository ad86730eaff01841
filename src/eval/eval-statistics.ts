import { choiceResolved, type TaskResult } from './results-store.js';

/** z for a two-sided 95% interval (the 0.975 quantile of the standard normal distribution). */
const Z95 = 1.959963984540054;

/**
 * The Wilson score interval of a binomial proportion (Wilson 1927, "Probable inference, the law of
 * succession, and statistical inference"; E. B. Wilson, JASA 22(158)). Unlike the normal
 * approximation it stays inside [0, 1] and is usable for small `n` and rates near 0 or 1.
 *
 * @returns `[low, high]` as fractions; `[0, 1]` when `n` is 0.
 */
export function wilsonInterval(successes: number, n: number, z = Z95): [number, number] {
  if (n === 0) return [0, 1];
  const p = successes / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/**
 * pass@k of one task from `n` samples of which `c` are correct: the unbiased estimator of Chen et al.
 * 2021, "Evaluating Large Language Models Trained on Code" (https://arxiv.org/abs/2107.03374,
 * section 2.1): `1 − C(n−c, k) / C(n, k)`, computed as a product to stay exact for large `n`.
 *
 * @throws RangeError when `k` is not in 1..n or `c` not in 0..n.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (!(k >= 1 && k <= n)) throw new RangeError(`pass@k needs 1 <= k <= n (k=${k}, n=${n})`);
  if (!(c >= 0 && c <= n)) throw new RangeError(`pass@k needs 0 <= c <= n (c=${c}, n=${n})`);
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/** Median, 90th percentile (nearest rank), mean and maximum of a sample; all 0 for an empty one. */
export interface Distribution {
  median: number;
  p90: number;
  mean: number;
  max: number;
}

export function distribution(values: readonly number[]): Distribution {
  if (values.length === 0) return { median: 0, p90: 0, mean: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (q: number): number =>
    sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
  const mid = sorted.length / 2;
  const median =
    sorted.length % 2 === 1
      ? (sorted[Math.floor(mid)] ?? 0)
      : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return {
    median,
    p90: rank(0.9),
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    max: sorted.at(-1) ?? 0,
  };
}

/** The figures of an evaluation (`summary.json`; report.md and report.html show the same). */
export interface EvalSummary {
  tasks: number;
  /** Tasks whose best-of-N choice resolved them. */
  resolved: number;
  /** `resolved / tasks` (0 for no task). */
  resolvedRate: number;
  /** 95% Wilson interval of `resolvedRate`. */
  resolvedRateCi95: [number, number];
  /** Candidates per task (the largest n of any task). */
  candidates: number;
  /** Mean pass@1 over tasks (Chen et al. estimator). */
  passAt1: number;
  /** Mean pass@k with k = {@link candidates}, over tasks with that many candidates; `null` when none. */
  passAtK: { k: number; value: number } | null;
  /** The best-of-N choice's resolved rate against pass@k (what an oracle choosing among the candidates would get). */
  bestOfN: { choiceRate: number; passAtK: number | null };
  /** Candidates by the agent loop's exit reason. */
  exitReasons: Record<string, number>;
  /** Tasks that ended with an error before any candidate finished. */
  errors: number;
  /** Per task, summed over its candidates. Units: steps, tokens (prompt + completion), seconds. */
  stepsPerTask: Distribution;
  tokensPerTask: Distribution;
  secondsPerTask: Distribution;
  perTask: Array<{
    instance_id: string;
    resolved: boolean;
    candidatesResolved: number;
    candidates: number;
    steps: number;
    tokens: number;
    seconds: number;
  }>;
}

/** Compute the figures of an evaluation from its results. */
export function summarizeResults(results: readonly TaskResult[]): EvalSummary {
  const n = results.length;
  const resolved = results.filter(choiceResolved).length;
  const candidates = Math.max(0, ...results.map((r) => r.candidates.length));
  const graded = results.filter((r) => r.candidates.length > 0);
  const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
  const correct = (r: TaskResult): number => r.candidates.filter((c) => c.resolved).length;
  // A task with no finished candidate counts as failed for pass@1.
  const passAt1 = mean(
    results.map((r) => (r.candidates.length === 0 ? 0 : passAtK(r.candidates.length, correct(r), 1))),
  );
  const full = graded.filter((r) => r.candidates.length === candidates);
  const passAtKValue =
    candidates > 0 && full.length > 0
      ? mean(full.map((r) => passAtK(candidates, correct(r), candidates)))
      : null;
  const exitReasons: Record<string, number> = {};
  for (const r of results)
    for (const c of r.candidates) exitReasons[c.exitReason] = (exitReasons[c.exitReason] ?? 0) + 1;
  const perTask = results.map((r) => ({
    instance_id: r.instance_id,
    resolved: choiceResolved(r),
    candidatesResolved: correct(r),
    candidates: r.candidates.length,
    steps: r.candidates.reduce((a, c) => a + c.steps, 0),
    tokens: r.candidates.reduce((a, c) => a + c.tokens.prompt + c.tokens.completion, 0),
    seconds: r.durationMs / 1000,
  }));
  return {
    tasks: n,
    resolved,
    resolvedRate: n === 0 ? 0 : resolved / n,
    resolvedRateCi95: wilsonInterval(resolved, n),
    candidates,
    passAt1,
    passAtK: passAtKValue === null ? null : { k: candidates, value: passAtKValue },
    bestOfN: { choiceRate: n === 0 ? 0 : resolved / n, passAtK: passAtKValue },
    exitReasons,
    errors: results.filter((r) => r.error).length,
    stepsPerTask: distribution(perTask.map((t) => t.steps)),
    tokensPerTask: distribution(perTask.map((t) => t.tokens)),
    secondsPerTask: distribution(perTask.map((t) => t.seconds)),
    perTask,
  };
}
