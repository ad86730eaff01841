import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { readBuildInfo, type BuildInfo } from './build-info.js';

/**
 * Prometheus metrics of FrogNano bot (prom-client, https://github.com/siimon/prom-client). Each
 * process has its own registry holding only its own families — never prom-client's global
 * default registry, so tests and two apps in one process do not share counters:
 *
 * - `serve` ({@link createServeMetrics}): webhooks and queue depth.
 * - `worker` ({@link createWorkerMetrics}): jobs by outcome, durations, steps, tokens, pick-up
 *   latency, running jobs, sandbox failures, model server reachability.
 *
 * Both carry `frognano_build_info{version,commit,node}` and prom-client's default Node.js and
 * process metrics under their standard names (`process_*`, `nodejs_*`, no prefix), so the common
 * Node.js dashboards work. Names follow https://prometheus.io/docs/practices/naming/: base units
 * (seconds), `_total` for counters; `promtool check metrics` finds nothing to lint (hence three
 * default gauges are left out, see {@link LINTED_DEFAULT_GAUGES}).
 */
interface BaseMetrics {
  readonly registry: Registry;
}

/** Options of {@link createServeMetrics} and {@link createWorkerMetrics}. */
export interface MetricsOptions {
  /** Registry to register on; default a new {@link Registry}. */
  registry?: Registry;
  /** Also collect prom-client's default process and Node.js metrics; default true. */
  defaultMetrics?: boolean;
  /** Build facts of `frognano_build_info`; default {@link readBuildInfo}. */
  buildInfo?: BuildInfo;
}

/** Metrics of `serve`. */
export interface ServeMetrics extends BaseMetrics {
  /** Webhook deliveries handled, by event and result (`queued`, `ignored`, `refused`, `cancelled`, `error`, …). */
  readonly webhooksTotal: Counter<'event' | 'result'>;
  /** Time to handle a webhook delivery (checks, enqueue, comment), seconds. */
  readonly webhookDurationSeconds: Histogram<'event'>;
  /** Jobs in the queue by BullMQ state (`waiting`, `active`, `delayed`, `failed`, …), read on scrape. */
  readonly queueDepth: Gauge<'state'>;
  /**
   * Set where queue depth is read from at scrape time. Errors from the source are swallowed: a
   * scrape must not fail because Redis is down (`/readyz` reports that).
   */
  setQueueDepthSource(source: () => Promise<Record<string, number>>): void;
}

/** Plain facts about a finished job, for {@link WorkerMetrics.recordJob}. */
export interface JobFacts {
  /** Outcome kind, e.g. `pr_opened`, `no_change`, `sandbox_failed` (see pipeline/outcome.ts). */
  outcome: string;
  /** Wall-clock time from pick-up to outcome, milliseconds. */
  durationMs: number;
  /** Agent run facts, when the agent ran. */
  run?: { steps: number; promptTokens: number; completionTokens: number };
}

/** Metrics of `worker`. */
export interface WorkerMetrics extends BaseMetrics {
  /** Jobs finished, by outcome kind. */
  readonly jobsTotal: Counter<'outcome'>;
  /** Wall-clock time of a job from pick-up to outcome, seconds, by outcome kind. */
  readonly jobDurationSeconds: Histogram<'outcome'>;
  /** Agent loop steps per job (jobs that ran the agent only). */
  readonly jobSteps: Histogram;
  /** Model tokens used, by kind (`prompt` or `completion`). */
  readonly tokensTotal: Counter<'kind'>;
  /** Time from enqueue to a worker picking the job up, seconds. */
  readonly pickupLatencySeconds: Histogram;
  /** Jobs that ended because the sandbox could not be created or failed under them, by driver. */
  readonly sandboxFailuresTotal: Counter<'driver'>;
  /** Record the end of a job. */
  recordJob(facts: JobFacts): void;
  /**
   * Set, at scrape time, the jobs this worker runs (`frognano_worker_active_jobs`) and whether the
   * model server answers (`frognano_model_server_up`, 1 or 0). A source that throws leaves the
   * gauge at its last value.
   */
  setScrapeSources(sources: { activeJobs?: () => number; modelServerUp?: () => Promise<boolean> }): void;
}

/**
 * prom-client's default gauges whose names end in `_total`, which `promtool check metrics` rejects
 * for a gauge. They are sums of `nodejs_active_handles{type}` (and requests, resources), which stay:
 * `sum(nodejs_active_handles)` gives the same number.
 */
const LINTED_DEFAULT_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** Registry, default metrics and `frognano_build_info`: what both processes share. */
function createBase(options: MetricsOptions): Registry {
  const registry = options.registry ?? new Registry();
  if (options.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry });
    for (const name of LINTED_DEFAULT_GAUGES) registry.removeSingleMetric(name);
  }
  const build = options.buildInfo ?? readBuildInfo();
  new Gauge({
    name: 'frognano_build_info',
    help: 'Build of the running FrogNano bot: version, git commit and Node.js version; always 1.',
    labelNames: ['version', 'commit', 'node'] as const,
    registers: [registry],
  }).set({ version: build.version, commit: build.commit, node: build.node }, 1);
  return registry;
}

/** The metrics of `serve` on their own registry. */
export function createServeMetrics(options: MetricsOptions = {}): ServeMetrics {
  const registry = createBase(options);
  const registers = [registry];
  let depthSource: (() => Promise<Record<string, number>>) | null = null;
  return {
    registry,
    webhooksTotal: new Counter({
      name: 'frognano_webhooks_total',
      help: 'Webhook deliveries handled, by event and result.',
      labelNames: ['event', 'result'] as const,
      registers,
    }),
    webhookDurationSeconds: new Histogram({
      name: 'frognano_webhook_duration_seconds',
      help: 'Time to handle a webhook delivery, in seconds.',
      labelNames: ['event'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'frognano_queue_depth',
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
    }),
    setQueueDepthSource(source) {
      depthSource = source;
    },
  };
}

/**
 * The metrics of `worker` on their own registry.
 *
 * @param options.sandboxDriver `local` or `kubernetes`, the `driver` label of sandbox failures.
 */
export function createWorkerMetrics(
  options: MetricsOptions & { sandboxDriver?: string } = {},
): WorkerMetrics {
  const registry = createBase(options);
  const registers = [registry];
  const driver = options.sandboxDriver ?? 'local';
  let sources: { activeJobs?: () => number; modelServerUp?: () => Promise<boolean> } = {};

  const jobsTotal = new Counter({
    name: 'frognano_jobs_total',
    help: 'Jobs finished, by outcome kind.',
    labelNames: ['outcome'] as const,
    registers,
  });
  const jobDurationSeconds = new Histogram({
    name: 'frognano_job_duration_seconds',
    help: 'Wall-clock time of a job from pick-up to outcome, in seconds.',
    labelNames: ['outcome'] as const,
    // Jobs run from seconds (refused) to hours (long agent runs).
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400],
    registers,
  });
  const jobSteps = new Histogram({
    name: 'frognano_job_steps',
    help: 'Agent loop steps per job that ran the agent.',
    buckets: [1, 5, 10, 20, 40, 60, 80, 100, 150, 200, 300],
    registers,
  });
  const tokensTotal = new Counter({
    name: 'frognano_tokens_total',
    help: 'Model tokens used, by kind (prompt or completion).',
    labelNames: ['kind'] as const,
    registers,
  });
  const sandboxFailuresTotal = new Counter({
    name: 'frognano_sandbox_failures_total',
    help: 'Jobs that ended because the sandbox failed, by sandbox driver.',
    labelNames: ['driver'] as const,
    registers,
  });
  // Zero series exist from the start, so rate() and alerts see the first failure.
  sandboxFailuresTotal.inc({ driver }, 0);
  new Gauge({
    name: 'frognano_worker_active_jobs',
    help: 'Jobs this worker process is running, read at scrape time.',
    registers,
    collect() {
      if (sources.activeJobs) this.set(sources.activeJobs());
    },
  });
  new Gauge({
    name: 'frognano_model_server_up',
    help: 'Whether the model server answers GET <MODEL_URL>/models (1) or not (0), probed at scrape time.',
    registers,
    async collect() {
      if (!sources.modelServerUp) return;
      try {
        this.set((await sources.modelServerUp()) ? 1 : 0);
      } catch {
        this.set(0);
      }
    },
  });

  return {
    registry,
    jobsTotal,
    jobDurationSeconds,
    jobSteps,
    tokensTotal,
    sandboxFailuresTotal,
    pickupLatencySeconds: new Histogram({
      name: 'frognano_job_pickup_latency_seconds',
      help: 'Time from enqueue to a worker picking the job up, in seconds.',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 60, 300, 1800, 3600],
      registers,
    }),
    recordJob(facts) {
      jobsTotal.inc({ outcome: facts.outcome });
      jobDurationSeconds.observe({ outcome: facts.outcome }, facts.durationMs / 1000);
      if (facts.outcome === 'sandbox_failed') sandboxFailuresTotal.inc({ driver });
      if (facts.run) {
        jobSteps.observe(facts.run.steps);
        tokensTotal.inc({ kind: 'prompt' }, facts.run.promptTokens);
        tokensTotal.inc({ kind: 'completion' }, facts.run.completionTokens);
      }
    },
    setScrapeSources(next) {
      sources = next;
    },
  };
}
