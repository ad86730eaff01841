import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Outcome } from '../pipeline/outcome.js';

/**
 * Prometheus metrics of FrogNano bot (prom-client, https://github.com/siimon/prom-client), on a
 * registry passed in or created here — never prom-client's global default registry, so tests and
 * two apps in one process do not share counters.
 *
 * Both processes expose `/metrics`: `serve` (webhooks, queue depth) and `worker` (jobs by outcome,
 * durations, steps, tokens, pick-up latency). Scrape both.
 *
 * Names follow the Prometheus conventions (https://prometheus.io/docs/practices/naming/): base
 * units (seconds), `_total` for counters.
 */
export interface Metrics {
  readonly registry: Registry;
  /** Jobs finished, by outcome kind (`pr_opened`, `no_change`, `tests_failing`, …). */
  readonly jobsTotal: Counter<'outcome'>;
  /** Wall-clock time of a job from pick-up to outcome, seconds, by outcome kind. */
  readonly jobDurationSeconds: Histogram<'outcome'>;
  /** Agent loop steps per job (jobs that ran the agent only). */
  readonly jobSteps: Histogram;
  /** Model tokens used, by kind (`prompt` or `completion`). */
  readonly tokensTotal: Counter<'kind'>;
  /** Time from enqueue to a worker picking the job up, seconds. */
  readonly pickupLatencySeconds: Histogram;
  /** Jobs in the queue by BullMQ state (`waiting`, `active`, `delayed`, `failed`), read on scrape. */
  readonly queueDepth: Gauge<'state'>;
  /** Webhook deliveries handled, by event and result (`queued`, `ignored`, `refused`, `cancelled`, `error`, …). */
  readonly webhooksTotal: Counter<'event' | 'result'>;
  /** Time to handle a webhook delivery (checks, enqueue, comment), seconds. */
  readonly webhookDurationSeconds: Histogram<'event'>;
  /** Record the end of a job: counters and histograms from its {@link Outcome}. */
  recordOutcome(outcome: Outcome, durationMs: number): void;
  /**
   * Set where queue depth is read from at scrape time (`serve` and `worker` pass their queue).
   * Errors from the source are swallowed: a scrape must not fail because Redis is down.
   */
  setQueueDepthSource(source: () => Promise<Record<string, number>>): void;
}

/**
 * Create the metrics on `registry` (default: a new {@link Registry}).
 *
 * @param options.defaultMetrics also collect prom-client's process metrics (CPU, memory, event
 *   loop); default true.
 * @param options.prefix metric name prefix; default `frognano_`.
 */
export function createMetrics(
  options: { registry?: Registry; defaultMetrics?: boolean; prefix?: string } = {},
): Metrics {
  const registry = options.registry ?? new Registry();
  const prefix = options.prefix ?? 'frognano_';
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix });
  const registers = [registry];

  let depthSource: (() => Promise<Record<string, number>>) | null = null;

  const jobsTotal = new Counter({
    name: `${prefix}jobs_total`,
    help: 'Jobs finished, by outcome kind.',
    labelNames: ['outcome'] as const,
    registers,
  });
  const jobDurationSeconds = new Histogram({
    name: `${prefix}job_duration_seconds`,
    help: 'Wall-clock time of a job from pick-up to outcome, in seconds.',
    labelNames: ['outcome'] as const,
    // Jobs run from seconds (refused) to hours (long agent runs).
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400],
    registers,
  });
  const jobSteps = new Histogram({
    name: `${prefix}job_steps`,
    help: 'Agent loop steps per job.',
    buckets: [1, 5, 10, 20, 40, 60, 80, 100, 150, 200, 300],
    registers,
  });
  const tokensTotal = new Counter({
    name: `${prefix}tokens_total`,
    help: 'Model tokens used, by kind (prompt or completion).',
    labelNames: ['kind'] as const,
    registers,
  });
  const pickupLatencySeconds = new Histogram({
    name: `${prefix}job_pickup_latency_seconds`,
    help: 'Time from enqueue to a worker picking the job up, in seconds.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 60, 300, 1800, 3600],
    registers,
  });
  const queueDepth = new Gauge({
    name: `${prefix}queue_depth`,
    help: 'Jobs in the queue by state, read at scrape time.',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      if (!depthSource) return;
      try {
        const counts = await depthSource();
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      } catch {
        // Redis down: keep the last values; /readyz reports the outage.
      }
    },
  });
  const webhooksTotal = new Counter({
    name: `${prefix}webhooks_total`,
    help: 'Webhook deliveries handled, by event and result.',
    labelNames: ['event', 'result'] as const,
    registers,
  });
  const webhookDurationSeconds = new Histogram({
    name: `${prefix}webhook_duration_seconds`,
    help: 'Time to handle a webhook delivery, in seconds.',
    labelNames: ['event'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });

  return {
    registry,
    jobsTotal,
    jobDurationSeconds,
    jobSteps,
    tokensTotal,
    pickupLatencySeconds,
    queueDepth,
    webhooksTotal,
    webhookDurationSeconds,
    recordOutcome(outcome, durationMs) {
      jobsTotal.inc({ outcome: outcome.kind });
      jobDurationSeconds.observe({ outcome: outcome.kind }, durationMs / 1000);
      const summary = 'summary' in outcome ? outcome.summary : undefined;
      if (summary) {
        jobSteps.observe(summary.steps);
        tokensTotal.inc({ kind: 'prompt' }, summary.promptTokens);
        tokensTotal.inc({ kind: 'completion' }, summary.completionTokens);
      }
    },
    setQueueDepthSource(source) {
      depthSource = source;
    },
  };
}
