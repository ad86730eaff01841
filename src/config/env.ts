import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { AppError } from '../app-error.js';

/**
 * Process configuration of `frognano-bot serve` and `frognano-bot worker`, read from environment
 * variables once at start (DESIGN.md "Configuration": the built-in layer below the admin policy).
 *
 * One table ({@link ENV_SPECS}) drives both parsing and the README table ({@link ENV_DOCS}), so the
 * two cannot drift apart. Variable names follow Probot's where Probot has one (APP_ID, PRIVATE_KEY,
 * PRIVATE_KEY_PATH, WEBHOOK_SECRET, WEBHOOK_PATH, GHE_HOST, GHE_PROTOCOL, PORT, HOST, LOG_LEVEL;
 * https://probot.github.io/docs/configuration/), so an existing Probot deployment reads naturally.
 */
export interface AppEnv {
  /** The GitHub App's numeric id (APP_ID). */
  appId: number;
  /** The GitHub App's private key, PEM text (from PRIVATE_KEY or the file at PRIVATE_KEY_PATH). */
  privateKey: string;
  /** Shared secret of webhook signatures (`X-Hub-Signature-256`, HMAC-SHA256). */
  webhookSecret: string;
  /** URL path of the webhook route, e.g. `/api/github/webhooks`. */
  webhookPath: string;
  /** GitHub Enterprise Server host name (with optional `:port`), or null for github.com. */
  gheHost: string | null;
  gheProtocol: 'https' | 'http';
  /** REST API base URL: `${GHE_PROTOCOL}://${GHE_HOST}/api/v3`, or `https://api.github.com`. */
  githubApiUrl: string;
  /** Web and git base URL: `${GHE_PROTOCOL}://${GHE_HOST}`, or `https://github.com`. */
  githubWebUrl: string;
  redisUrl: string;
  /** Prefix of every Redis key of the queue, the per-issue guard and cancellation. */
  queuePrefix: string;
  /** BullMQ queue name. */
  queueName: string;
  /** TCP port and bind address of `serve`. */
  port: number;
  host: string;
  /** TCP port of the worker's `/metrics` and `/healthz` (0: no HTTP server in the worker). */
  workerPort: number;
  /** Bind address of the worker's HTTP server (default `127.0.0.1`; `0.0.0.0` in a pod). */
  workerHost: string;
  /** OpenAI-compatible base URL of the model server (SGLang), ending in `/v1`. */
  modelUrl: string;
  modelName: string;
  modelApiKey: string | null;
  sandboxDriver: 'local' | 'kubernetes';
  /** Kubernetes driver: namespace, image, ServiceAccount and RuntimeClass of sandbox pods. */
  sandboxNamespace: string;
  sandboxImage: string | null;
  sandboxServiceAccount: string | null;
  sandboxRuntimeClass: string | null;
  /**
   * Local driver: start sandboxes even when this host cannot enforce their whole-sandbox limits
   * (memory, processes, workspace size, unprivileged uid). False: the worker refuses them.
   */
  sandboxAllowUnlimited: boolean;
  /** Local driver: host uid (and gid) that sandboxes run as when the worker runs as root. */
  sandboxHostUid: number;
  /**
   * What the egress probe in every sandbox that runs model or repository code must NOT reach:
   * SANDBOX_EGRESS_PROBE_TARGETS, where `default` stands for the GitHub host (web and API), the
   * model server, Redis and the Kubernetes API server.
   */
  egressProbeTargets: readonly { name: string; url: string }[];
  /** Jobs one worker process runs at the same time. */
  workerConcurrency: number;
  /**
   * Jobs running at once across all workers and repositories (a Redis-held cap, see
   * queue/concurrency-limiter.ts); 0 = no global cap.
   */
  maxConcurrentJobs: number;
  /** The issue label that starts a job. */
  triggerLabel: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `json` lines, or `pretty` for a terminal (pino-pretty). */
  logFormat: 'json' | 'pretty';
  /** Path of the admin policy YAML file, or null for built-in defaults only. */
  policyFile: string | null;
  /** Basic-auth credentials of the `/admin` pages; both null when the admin pages are off. */
  adminUser: string | null;
  adminPassword: string | null;
  /** Bull Board's job actions (retry, clean, remove) are enabled; default false: read-only. */
  adminActions: boolean;
  /** Directory of the worker's clones (one subdirectory per job). */
  workDir: string;
  /** Directory where trajectories are stored (one JSON file per job). */
  trajectoryDir: string;
  /** Days a job's trajectories and test logs are kept in TRAJECTORY_DIR (the worker sweeps older ones). */
  trajectoryRetentionDays: number;
  /** The run record store (RECORD_* variables). */
  record: RecordStoreEnv;
  /**
   * BullMQ `attempts` per job: the first try plus JOB_RETRIES retries (a run that ends in a
   * temporary error runs again; other outcomes are final).
   */
  jobAttempts: number;
  /**
   * Deprecation warnings about the variables read (e.g. JOB_ATTEMPTS instead of JOB_RETRIES); the
   * command logs each once at start.
   */
  warnings: readonly string[];
  /** Wait before the first retry, ms (exponential backoff). */
  jobBackoffMs: number;
  /** Tries of a webhook delivery's GitHub side (permission, policy, status comment) in `serve`. */
  intakeAttempts: number;
  /** Wait before the first retry of a delivery's GitHub side, ms; doubles with each retry. */
  intakeBackoffMs: number;
  /** BullMQ job lock duration, milliseconds; renewed every half of it while the worker lives. */
  jobLockDurationMs: number;
  /** How often workers look for stalled jobs (lock expired: worker died), milliseconds. */
  stalledIntervalMs: number;
  /** Times a stalled job goes back to the queue before it fails for good. */
  maxStalledCount: number;
  /** How often a running job checks its cancel key in Redis (besides pub/sub), milliseconds. */
  cancelPollMs: number;
  /** Bound on draining at SIGTERM (in-flight requests, active jobs), milliseconds. */
  shutdownTimeoutMs: number;
}

/** Configuration of the run record store (RECORD_* variables). */
export interface RecordStoreEnv {
  driver: 'volume' | 's3';
  /** Folder of the volume driver. */
  dir: string;
  /** The bucket of the s3 driver; null when RECORD_S3_BUCKET is unset. */
  s3: {
    bucket: string;
    endpoint: string | null;
    region: string;
    prefix: string | null;
    forcePathStyle: boolean;
    credentials: { accessKeyId: string; secretAccessKey: string } | null;
  } | null;
  /** Days records are kept before the retention sweep removes them. */
  retentionDays: number;
  /** Local folder of records waiting for the store. */
  spoolDir: string;
  /** Milliseconds between two tries of pending records. */
  retryMs: number;
}

/** One documented environment variable (a row of the README table). */
export interface EnvDoc {
  name: string;
  /** Default value as text; `null` when there is none. */
  default: string | null;
  required: boolean;
  description: string;
  /** True for secrets: their values never appear in messages. */
  secret: boolean;
}

interface EnvSpec<T> extends EnvDoc {
  schema: z.ZodType<T>;
}

const DEFAULT_WORK_ROOT = join(tmpdir(), 'frognano');

/** A whole number in [min, max], with a message that says so (zod's default names types, not people's words). */
const int = (min: number, max: number) => {
  const allowed =
    max >= Number.MAX_SAFE_INTEGER ? `a whole number from ${min} up` : `a whole number from ${min} to ${max}`;
  return z.coerce
    .number({ error: `must be ${allowed}` })
    .int({ error: `must be ${allowed}` })
    .min(min, { error: `must be ${allowed}` })
    .max(max, { error: `must be ${allowed}` });
};
const url = (protocols: RegExp) =>
  z
    .url({ protocol: protocols, error: 'must be a URL like the default' })
    .transform((u) => u.replace(/\/+$/, ''));

function spec<T>(
  name: string,
  doc: { default?: string; required?: boolean; secret?: boolean; description: string },
  schema: z.ZodType<T>,
): EnvSpec<T> {
  return {
    name,
    default: doc.default ?? null,
    required: doc.required ?? false,
    description: doc.description,
    secret: doc.secret ?? false,
    schema,
  };
}

/**
 * Every variable, its schema and its documentation. Defaults are applied before the schema runs, so
 * a default is validated like a given value.
 */
export const ENV_SPECS = {
  APP_ID: spec(
    'APP_ID',
    { required: true, description: 'The GitHub App ID (a number), shown on the App settings page.' },
    int(1, Number.MAX_SAFE_INTEGER),
  ),
  PRIVATE_KEY: spec(
    'PRIVATE_KEY',
    {
      secret: true,
      description:
        'The App private key (PEM), or the PEM base64-encoded on one line. Set this or PRIVATE_KEY_PATH.',
    },
    z.string(),
  ),
  PRIVATE_KEY_PATH: spec(
    'PRIVATE_KEY_PATH',
    {
      description: 'Path of the `.pem` file downloaded from the App settings page. Set this or PRIVATE_KEY.',
    },
    z.string(),
  ),
  WEBHOOK_SECRET: spec(
    'WEBHOOK_SECRET',
    {
      required: true,
      secret: true,
      description:
        'The webhook secret entered in the App settings (at least 8 characters); signatures are checked with it.',
    },
    z.string().min(8, 'must be at least 8 characters'),
  ),
  WEBHOOK_PATH: spec(
    'WEBHOOK_PATH',
    { default: '/api/github/webhooks', description: 'URL path of the webhook route of `serve`.' },
    z.string().regex(/^\/[\w\-./]*$/, 'must be a URL path starting with /'),
  ),
  GHE_HOST: spec(
    'GHE_HOST',
    {
      description:
        'Host name (and optional :port) of the GitHub Enterprise Server, e.g. `github.example.com`. Unset: github.com.',
    },
    z
      .string()
      .regex(
        /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$/,
        'must be a host name without scheme or path, e.g. github.example.com',
      ),
  ),
  GHE_PROTOCOL: spec(
    'GHE_PROTOCOL',
    { default: 'https', description: 'Protocol of the GitHub Enterprise Server: `https` or `http`.' },
    z.enum(['https', 'http']),
  ),
  REDIS_URL: spec(
    'REDIS_URL',
    { default: 'redis://127.0.0.1:6379', description: 'Redis holding the job queue (BullMQ).' },
    url(/^rediss?$/),
  ),
  QUEUE_PREFIX: spec(
    'QUEUE_PREFIX',
    { default: 'frognano', description: 'Prefix of every Redis key this app writes.' },
    z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only'),
  ),
  QUEUE_NAME: spec(
    'QUEUE_NAME',
    { default: 'jobs', description: 'Name of the BullMQ queue.' },
    z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only'),
  ),
  PORT: spec('PORT', { default: '3000', description: 'TCP port of `serve`.' }, int(1, 65535)),
  HOST: spec('HOST', { default: '0.0.0.0', description: 'Bind address of `serve`.' }, z.string().min(1)),
  WORKER_PORT: spec(
    'WORKER_PORT',
    {
      default: '3001',
      description: 'TCP port of the worker\u2019s `/healthz`, `/readyz` and `/metrics`; `0` turns it off.',
    },
    int(0, 65535),
  ),
  WORKER_HOST: spec(
    'WORKER_HOST',
    {
      default: '127.0.0.1',
      description:
        'Bind address of the worker\u2019s `/healthz`, `/readyz` and `/metrics`; `0.0.0.0` to be reached from outside (a pod).',
    },
    z.string().min(1),
  ),
  MODEL_URL: spec(
    'MODEL_URL',
    { default: 'http://127.0.0.1:30000/v1', description: 'OpenAI-compatible base URL of the SGLang server.' },
    url(/^https?$/),
  ),
  MODEL_NAME: spec(
    'MODEL_NAME',
    { default: 'microsoft/FrogNano-4B-2609', description: 'Model name sent to the model server.' },
    z.string().min(1),
  ),
  MODEL_API_KEY: spec(
    'MODEL_API_KEY',
    { secret: true, description: 'API key of the model server, if it wants one.' },
    z.string(),
  ),
  SANDBOX_DRIVER: spec(
    'SANDBOX_DRIVER',
    {
      default: 'local',
      description:
        'Where the agent runs: `local` (bubblewrap on this machine) or `kubernetes` (a pod per job).',
    },
    z.enum(['local', 'kubernetes']),
  ),
  SANDBOX_NAMESPACE: spec(
    'SANDBOX_NAMESPACE',
    {
      default: 'frognano-sandboxes',
      description: 'Kubernetes namespace of the sandbox pods (driver `kubernetes`).',
    },
    z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a Kubernetes namespace name'),
  ),
  SANDBOX_IMAGE: spec(
    'SANDBOX_IMAGE',
    {
      description:
        'Image of the sandbox pods; required with driver `kubernetes` (the admin policy may override it per repository).',
    },
    z.string().min(1),
  ),
  SANDBOX_SERVICE_ACCOUNT: spec(
    'SANDBOX_SERVICE_ACCOUNT',
    {
      description:
        'ServiceAccount of the sandbox pods (its token is never mounted). Unset: the namespace default.',
    },
    z.string().min(1),
  ),
  SANDBOX_RUNTIME_CLASS: spec(
    'SANDBOX_RUNTIME_CLASS',
    { description: 'RuntimeClass of the sandbox pods, e.g. `gvisor`. Unset: the cluster default.' },
    z.string().min(1),
  ),
  SANDBOX_ALLOW_UNLIMITED: spec(
    'SANDBOX_ALLOW_UNLIMITED',
    {
      default: 'false',
      description:
        'Driver `local`: `true` starts sandboxes even where this host cannot enforce their whole-sandbox limits (memory incl. /tmp, processes, workspace size, unprivileged uid); `false` refuses them. `frognano-bot doctor` lists what holds and the fixes.',
    },
    z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true'),
  ),
  SANDBOX_HOST_UID: spec(
    'SANDBOX_HOST_UID',
    {
      default: '65534',
      description:
        'Driver `local`, worker running as root: the host uid and gid sandboxes run as. Best a uid of its own that owns no file.',
    },
    int(1, 2 ** 31 - 2),
  ),
  SANDBOX_EGRESS_PROBE_TARGETS: spec(
    'SANDBOX_EGRESS_PROBE_TARGETS',
    {
      default: 'default',
      description:
        'Comma-separated URLs (or `name=URL`) that every sandbox running model or repository code must not reach; a reachable one stops the job. `default` stands for the GitHub host (web and API), MODEL_URL, REDIS_URL and the Kubernetes API server, e.g. `default,metadata=http://169.254.169.254`.',
    },
    z.string().transform((text, ctx) => {
      const items: ({ name: string; url: string } | 'default')[] = [];
      for (const raw of text
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean)) {
        if (raw === 'default') {
          items.push('default');
          continue;
        }
        const eq = raw.indexOf('=');
        const named = eq > 0 && !raw.slice(0, eq).includes(':');
        const name = named ? raw.slice(0, eq) : raw;
        const value = named ? raw.slice(eq + 1) : raw;
        let parsed: URL;
        try {
          parsed = new URL(value);
        } catch {
          ctx.addIssue({ code: 'custom', message: `${JSON.stringify(raw)} is not a URL or name=URL` });
          continue;
        }
        items.push({ name: named ? name : parsed.host, url: value });
      }
      return items;
    }),
  ),
  WORKER_CONCURRENCY: spec(
    'WORKER_CONCURRENCY',
    { default: '2', description: 'Jobs one worker process runs at the same time.' },
    int(1, 64),
  ),
  MAX_CONCURRENT_JOBS: spec(
    'MAX_CONCURRENT_JOBS',
    {
      default: '0',
      description:
        'Jobs running at once across all workers and repositories (enforced through Redis); `0` = no cap. A job over it waits in the queue.',
    },
    int(0, 10_000),
  ),
  TRIGGER_LABEL: spec(
    'TRIGGER_LABEL',
    { default: 'frognano', description: 'The issue label that starts a job.' },
    z.string().min(1).max(50),
  ),
  LOG_LEVEL: spec(
    'LOG_LEVEL',
    { default: 'info', description: 'fatal, error, warn, info, debug, trace or silent.' },
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  ),
  LOG_FORMAT: spec(
    'LOG_FORMAT',
    {
      default: 'json',
      description:
        '`json` (one JSON object a line) or `pretty` (coloured lines for a terminal; needs the dev dependency pino-pretty).',
    },
    z.enum(['json', 'pretty']),
  ),
  POLICY_FILE: spec(
    'POLICY_FILE',
    {
      description:
        'Path of the admin policy YAML file (limits, allowed repositories). Unset: built-in defaults.',
    },
    z.string().min(1),
  ),
  ADMIN_USER: spec(
    'ADMIN_USER',
    { description: 'User name of the `/admin` pages (basic auth). Unset: `/admin` is off.' },
    z.string().min(1),
  ),
  ADMIN_PASSWORD: spec(
    'ADMIN_PASSWORD',
    { secret: true, description: 'Password of the `/admin` pages; at least 12 characters.' },
    z.string().min(12, 'must be at least 12 characters'),
  ),
  ADMIN_ACTIONS: spec(
    'ADMIN_ACTIONS',
    {
      default: 'false',
      description:
        '`true`: the admin may retry, promote, clean and remove jobs in Bull Board (`/admin/queues`). Default read-only.',
    },
    z.enum(['true', 'false']).transform((v) => v === 'true'),
  ),
  WORK_DIR: spec(
    'WORK_DIR',
    { default: join(DEFAULT_WORK_ROOT, 'work'), description: 'Directory of the worker\u2019s clones.' },
    z.string().min(1),
  ),
  TRAJECTORY_DIR: spec(
    'TRAJECTORY_DIR',
    {
      default: join(DEFAULT_WORK_ROOT, 'trajectories'),
      description: 'Directory where trajectories are stored.',
    },
    z.string().min(1),
  ),
  TRAJECTORY_RETENTION_DAYS: spec(
    'TRAJECTORY_RETENTION_DAYS',
    {
      default: '30',
      description:
        'Days a job\u2019s trajectories and test logs are kept in TRAJECTORY_DIR; the worker removes older ones at start and every 6 hours.',
    },
    int(1, 3650),
  ),
  RECORD_STORE: spec(
    'RECORD_STORE',
    {
      default: 'volume',
      description:
        'Where run records, trajectories and test logs are kept durably: `volume` (files under RECORD_DIR, a PersistentVolumeClaim) or `s3` (an S3-compatible bucket).',
    },
    z.enum(['volume', 's3'], { error: 'must be volume or s3' }),
  ),
  RECORD_DIR: spec(
    'RECORD_DIR',
    {
      default: join(DEFAULT_WORK_ROOT, 'records'),
      description: 'Folder of the volume record store (one folder per job under `jobs/`).',
    },
    z.string().min(1),
  ),
  RECORD_S3_BUCKET: spec(
    'RECORD_S3_BUCKET',
    { description: 'Bucket of the `s3` record store; required with RECORD_STORE=s3.' },
    z.string().min(3),
  ),
  RECORD_S3_ENDPOINT: spec(
    'RECORD_S3_ENDPOINT',
    {
      description:
        'Endpoint URL of an S3-compatible server (MinIO, Ceph); unset: AWS S3 of RECORD_S3_REGION.',
    },
    url(/^https?$/),
  ),
  RECORD_S3_REGION: spec(
    'RECORD_S3_REGION',
    { default: 'us-east-1', description: 'Region of the bucket.' },
    z.string().min(1),
  ),
  RECORD_S3_PREFIX: spec(
    'RECORD_S3_PREFIX',
    { description: 'Key prefix inside the bucket (e.g. `frognano`); unset: the bucket root.' },
    z.string().regex(/^[A-Za-z0-9._/-]+$/, 'must be letters, digits, `.`, `_`, `-` and `/`'),
  ),
  RECORD_S3_FORCE_PATH_STYLE: spec(
    'RECORD_S3_FORCE_PATH_STYLE',
    { default: 'true', description: 'Path-style bucket URLs (`<endpoint>/<bucket>/<key>`), as MinIO needs.' },
    z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true'),
  ),
  RECORD_S3_ACCESS_KEY_ID: spec(
    'RECORD_S3_ACCESS_KEY_ID',
    {
      description:
        'Access key of the bucket; unset: the AWS SDK default chain (environment, web identity, instance role).',
    },
    z.string().min(1),
  ),
  RECORD_S3_SECRET_ACCESS_KEY: spec(
    'RECORD_S3_SECRET_ACCESS_KEY',
    { secret: true, description: 'Secret key matching RECORD_S3_ACCESS_KEY_ID.' },
    z.string().min(1),
  ),
  RECORD_RETENTION_DAYS: spec(
    'RECORD_RETENTION_DAYS',
    {
      default: '365',
      description:
        'Days run records, trajectories and logs are kept in the record store; the worker sweeps older ones daily, writing a chained sweep entry.',
    },
    int(1, 36500),
  ),
  RECORD_SPOOL_DIR: spec(
    'RECORD_SPOOL_DIR',
    {
      default: join(DEFAULT_WORK_ROOT, 'record-spool'),
      description: 'Local folder of records waiting for the store when it is down; retried until stored.',
    },
    z.string().min(1),
  ),
  RECORD_RETRY_MS: spec(
    'RECORD_RETRY_MS',
    { default: '30000', description: 'Time between two tries of pending records, milliseconds.' },
    int(100, 3_600_000),
  ),
  JOB_RETRIES: spec(
    'JOB_RETRIES',
    {
      default: '1',
      description:
        'Retries of a job after a run ends in a temporary error (GitHub 5xx, token exchange), after the first try; other outcomes are final.',
    },
    int(0, 9),
  ),
  JOB_ATTEMPTS: spec(
    'JOB_ATTEMPTS',
    {
      description:
        'Deprecated: use JOB_RETRIES (= JOB_ATTEMPTS - 1). Still read when JOB_RETRIES is not set; a warning is logged at start.',
    },
    int(1, 10),
  ),
  JOB_BACKOFF_MS: spec(
    'JOB_BACKOFF_MS',
    { default: '30000', description: 'Wait before the first retry of a job, ms; doubles with each retry.' },
    int(0, 3_600_000),
  ),
  INTAKE_ATTEMPTS: spec(
    'INTAKE_ATTEMPTS',
    {
      default: '15',
      description:
        "Tries of a webhook delivery's GitHub side (permission, policy files, status comment) while GitHub fails; about 4.5 h in all.",
    },
    int(1, 50),
  ),
  INTAKE_BACKOFF_MS: spec(
    'INTAKE_BACKOFF_MS',
    {
      default: '1000',
      description: "Wait before the first retry of a delivery's GitHub side, ms; doubles with each retry.",
    },
    int(0, 3_600_000),
  ),
  JOB_LOCK_DURATION_MS: spec(
    'JOB_LOCK_DURATION_MS',
    {
      default: '60000',
      description: 'Job lock, ms; the worker renews it every half of it, so jobs may run for hours.',
    },
    int(1000, 3_600_000),
  ),
  STALLED_INTERVAL_MS: spec(
    'STALLED_INTERVAL_MS',
    { default: '30000', description: 'How often workers look for jobs whose worker died, ms.' },
    int(500, 3_600_000),
  ),
  MAX_STALLED_COUNT: spec(
    'MAX_STALLED_COUNT',
    {
      default: '1',
      description: 'Times a job whose worker died is run again before it fails with a comment.',
    },
    int(0, 10),
  ),
  CANCEL_POLL_MS: spec(
    'CANCEL_POLL_MS',
    { default: '2000', description: 'How often a running job checks its cancel key (besides pub/sub), ms.' },
    int(100, 60_000),
  ),
  SHUTDOWN_TIMEOUT_MS: spec(
    'SHUTDOWN_TIMEOUT_MS',
    {
      default: '30000',
      description:
        'At SIGTERM, how long to wait for requests and jobs before cancelling them (they are retried), ms.',
    },
    int(0, 3_600_000),
  ),
} as const;

/** The README table: every variable with its default and meaning. */
export const ENV_DOCS: readonly EnvDoc[] = Object.values(ENV_SPECS).map(
  ({ name, default: def, required, description, secret }) => ({
    name,
    default: def,
    required,
    description,
    secret,
  }),
);

/** Render {@link ENV_DOCS} as a Markdown table (for the README and `docs/github-app.md`). */
export function renderEnvTable(docs: readonly EnvDoc[] = ENV_DOCS): string {
  const rows = docs.map(
    (d) =>
      `| \`${d.name}\` | ${d.required ? 'yes' : ''} | ${d.default === null ? '' : `\`${d.default}\``} | ${d.description} |`,
  );
  return ['| Variable | Required | Default | Meaning |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

type SpecKey = keyof typeof ENV_SPECS;
type Parsed = { [K in SpecKey]: z.infer<(typeof ENV_SPECS)[K]['schema']> | undefined };

/**
 * Read, check and normalise the process configuration.
 *
 * Empty values count as unset (Kubernetes and `.env` files often carry `NAME=`). Secrets never
 * appear in error messages.
 *
 * @param env the environment to read; default `process.env`.
 * @returns the configuration, frozen.
 * @throws AppError `CONFIG_INVALID` (not retryable) whose message names every missing or malformed
 *   variable, one per line; `details.messages` holds the same lines as an array.
 */
export function loadEnv(env: NodeJS.ProcessEnv = process.env): AppEnv {
  const problems: string[] = [];
  const parsed = {} as Record<SpecKey, unknown>;

  for (const key of Object.keys(ENV_SPECS) as SpecKey[]) {
    const s = ENV_SPECS[key] as EnvSpec<unknown>;
    const given = env[key]?.trim();
    const raw = given === undefined || given === '' ? (s.default ?? undefined) : given;
    if (raw === undefined) {
      if (s.required) problems.push(`${key}: required — ${s.description}`);
      parsed[key] = undefined;
      continue;
    }
    const result = s.schema.safeParse(raw);
    if (result.success) {
      parsed[key] = result.data;
    } else {
      const why = result.error.issues.map((i) => i.message).join('; ');
      problems.push(s.secret ? `${key}: ${why}` : `${key}: ${why} (got ${JSON.stringify(raw)})`);
    }
  }
  const p = parsed as Parsed;

  const privateKey = readPrivateKey(p, problems);

  if ((p.ADMIN_USER === undefined) !== (p.ADMIN_PASSWORD === undefined) && !problems.some(isAdmin)) {
    problems.push(
      p.ADMIN_USER === undefined
        ? 'ADMIN_USER: required when ADMIN_PASSWORD is set'
        : 'ADMIN_PASSWORD: required when ADMIN_USER is set',
    );
  }

  if (p.SANDBOX_DRIVER === 'kubernetes' && p.SANDBOX_IMAGE === undefined) {
    problems.push(
      'SANDBOX_IMAGE: required when SANDBOX_DRIVER is kubernetes — the image of the sandbox pods',
    );
  }

  if (p.RECORD_STORE === 's3' && p.RECORD_S3_BUCKET === undefined) {
    problems.push('RECORD_S3_BUCKET: required when RECORD_STORE is s3 — the bucket of run records');
  }
  if ((p.RECORD_S3_ACCESS_KEY_ID === undefined) !== (p.RECORD_S3_SECRET_ACCESS_KEY === undefined)) {
    problems.push('RECORD_S3_ACCESS_KEY_ID and RECORD_S3_SECRET_ACCESS_KEY: set both or neither');
  }

  if (problems.length > 0) {
    throw new AppError(
      'CONFIG_INVALID',
      `invalid configuration (environment variables):\n  ${problems.join('\n  ')}`,
      { details: { messages: problems } },
    );
  }

  const warnings: string[] = [];
  const gheHost = p.GHE_HOST ?? null;
  const protocol = p.GHE_PROTOCOL ?? 'https';
  const githubWebUrl = gheHost ? `${protocol}://${gheHost}` : 'https://github.com';
  const githubApiUrl = gheHost ? `${protocol}://${gheHost}/api/v3` : 'https://api.github.com';
  return Object.freeze({
    appId: p.APP_ID!,
    privateKey: privateKey!,
    webhookSecret: p.WEBHOOK_SECRET!,
    webhookPath: p.WEBHOOK_PATH!,
    gheHost,
    gheProtocol: protocol,
    githubApiUrl,
    githubWebUrl,
    redisUrl: p.REDIS_URL!,
    queuePrefix: p.QUEUE_PREFIX!,
    queueName: p.QUEUE_NAME!,
    port: p.PORT!,
    host: p.HOST!,
    workerPort: p.WORKER_PORT!,
    workerHost: p.WORKER_HOST!,
    modelUrl: p.MODEL_URL!,
    modelName: p.MODEL_NAME!,
    modelApiKey: p.MODEL_API_KEY ?? null,
    sandboxDriver: p.SANDBOX_DRIVER!,
    sandboxNamespace: p.SANDBOX_NAMESPACE!,
    sandboxImage: p.SANDBOX_IMAGE ?? null,
    sandboxServiceAccount: p.SANDBOX_SERVICE_ACCOUNT ?? null,
    sandboxRuntimeClass: p.SANDBOX_RUNTIME_CLASS ?? null,
    sandboxAllowUnlimited: p.SANDBOX_ALLOW_UNLIMITED!,
    sandboxHostUid: p.SANDBOX_HOST_UID!,
    egressProbeTargets: Object.freeze(
      (p.SANDBOX_EGRESS_PROBE_TARGETS ?? ['default']).flatMap((t) =>
        t === 'default'
          ? defaultEgressTargets({
              githubWebUrl,
              githubApiUrl,
              modelUrl: p.MODEL_URL!,
              redisUrl: p.REDIS_URL!,
              env,
            })
          : [t],
      ),
    ),
    workerConcurrency: p.WORKER_CONCURRENCY!,
    maxConcurrentJobs: p.MAX_CONCURRENT_JOBS!,
    triggerLabel: p.TRIGGER_LABEL!,
    logLevel: p.LOG_LEVEL!,
    logFormat: p.LOG_FORMAT!,
    policyFile: p.POLICY_FILE ?? null,
    adminUser: p.ADMIN_USER ?? null,
    adminPassword: p.ADMIN_PASSWORD ?? null,
    adminActions: p.ADMIN_ACTIONS!,
    workDir: p.WORK_DIR!,
    trajectoryDir: p.TRAJECTORY_DIR!,
    trajectoryRetentionDays: p.TRAJECTORY_RETENTION_DAYS!,
    record: recordEnvOf(p),
    jobAttempts: jobAttemptsOf(env, p, warnings),
    warnings: Object.freeze(warnings),
    jobBackoffMs: p.JOB_BACKOFF_MS!,
    intakeAttempts: p.INTAKE_ATTEMPTS!,
    intakeBackoffMs: p.INTAKE_BACKOFF_MS!,
    jobLockDurationMs: p.JOB_LOCK_DURATION_MS!,
    stalledIntervalMs: p.STALLED_INTERVAL_MS!,
    maxStalledCount: p.MAX_STALLED_COUNT!,
    cancelPollMs: p.CANCEL_POLL_MS!,
    shutdownTimeoutMs: p.SHUTDOWN_TIMEOUT_MS!,
  });
}

/**
 * BullMQ attempts from JOB_RETRIES (retries after the first try), or from the deprecated
 * JOB_ATTEMPTS (tries) when only it is set; a warning naming JOB_RETRIES goes into `warnings`.
 */
function jobAttemptsOf(env: NodeJS.ProcessEnv, p: Parsed, warnings: string[]): number {
  const retriesGiven = (env.JOB_RETRIES?.trim() ?? '') !== '';
  if (p.JOB_ATTEMPTS !== undefined) {
    warnings.push(
      retriesGiven
        ? 'JOB_ATTEMPTS is deprecated and ignored because JOB_RETRIES is set; remove JOB_ATTEMPTS'
        : `JOB_ATTEMPTS is deprecated: set JOB_RETRIES=${p.JOB_ATTEMPTS - 1} instead (retries after the first try)`,
    );
    if (!retriesGiven) return p.JOB_ATTEMPTS;
  }
  return p.JOB_RETRIES! + 1;
}

/**
 * The default egress probe targets: the GitHub host (web, and the API when on another host), the
 * model server, Redis, and the Kubernetes API server — in a pod the address Kubernetes gives every
 * container (`KUBERNETES_SERVICE_HOST`/`_PORT`), else the in-cluster name `kubernetes.default.svc`.
 */
export function defaultEgressTargets(input: {
  githubWebUrl: string;
  githubApiUrl: string;
  modelUrl: string;
  redisUrl: string;
  env: NodeJS.ProcessEnv;
}): { name: string; url: string }[] {
  const targets = [{ name: 'github', url: input.githubWebUrl }];
  if (new URL(input.githubApiUrl).host !== new URL(input.githubWebUrl).host)
    targets.push({ name: 'github-api', url: input.githubApiUrl });
  targets.push({ name: 'model-server', url: input.modelUrl }, { name: 'redis', url: input.redisUrl });
  const kubeHost = input.env.KUBERNETES_SERVICE_HOST?.trim();
  const kubePort = input.env.KUBERNETES_SERVICE_PORT?.trim() || '443';
  targets.push({
    name: 'kubernetes-api',
    url: kubeHost
      ? `https://${kubeHost.includes(':') ? `[${kubeHost}]` : kubeHost}:${kubePort}`
      : 'https://kubernetes.default.svc',
  });
  return targets;
}

/**
 * Only the RECORD_* variables, for commands that read the record store without running the app
 * (`frognano-bot audit`, `trajectory`): no GitHub App secrets needed.
 *
 * @throws AppError `CONFIG_INVALID` naming each malformed variable.
 */
export function loadRecordEnv(env: NodeJS.ProcessEnv = process.env): RecordStoreEnv {
  const problems: string[] = [];
  const p = {} as Record<string, unknown>;
  for (const key of Object.keys(ENV_SPECS).filter((k) => k.startsWith('RECORD_')) as SpecKey[]) {
    const s = ENV_SPECS[key] as EnvSpec<unknown>;
    const given = env[key]?.trim();
    const raw = given === undefined || given === '' ? (s.default ?? undefined) : given;
    if (raw === undefined) continue;
    const result = s.schema.safeParse(raw);
    if (result.success) p[key] = result.data;
    else problems.push(`${key}: ${result.error.issues.map((i) => i.message).join('; ')}`);
  }
  const v = p as Partial<Parsed>;
  if (v.RECORD_STORE === 's3' && v.RECORD_S3_BUCKET === undefined)
    problems.push('RECORD_S3_BUCKET: required when RECORD_STORE is s3');
  if (problems.length > 0) {
    throw new AppError(
      'CONFIG_INVALID',
      `invalid configuration (environment variables):\n  ${problems.join('\n  ')}`,
      {
        details: { messages: problems },
      },
    );
  }
  return recordEnvOf(v);
}

function recordEnvOf(p: Partial<Parsed>): RecordStoreEnv {
  return {
    driver: p.RECORD_STORE!,
    dir: p.RECORD_DIR!,
    s3: p.RECORD_S3_BUCKET
      ? {
          bucket: p.RECORD_S3_BUCKET,
          endpoint: p.RECORD_S3_ENDPOINT ?? null,
          region: p.RECORD_S3_REGION!,
          prefix: p.RECORD_S3_PREFIX ?? null,
          forcePathStyle: p.RECORD_S3_FORCE_PATH_STYLE!,
          credentials:
            p.RECORD_S3_ACCESS_KEY_ID && p.RECORD_S3_SECRET_ACCESS_KEY
              ? { accessKeyId: p.RECORD_S3_ACCESS_KEY_ID, secretAccessKey: p.RECORD_S3_SECRET_ACCESS_KEY }
              : null,
        }
      : null,
    retentionDays: p.RECORD_RETENTION_DAYS!,
    spoolDir: p.RECORD_SPOOL_DIR!,
    retryMs: p.RECORD_RETRY_MS!,
  };
}

function isAdmin(problem: string): boolean {
  return problem.startsWith('ADMIN_');
}

/**
 * The private key from PRIVATE_KEY (PEM with real or `\n`-escaped newlines, or base64 of the PEM) or
 * from the file at PRIVATE_KEY_PATH; checked to be a usable key so a bad key stops the process at
 * start rather than at the first webhook.
 */
function readPrivateKey(p: Parsed, problems: string[]): string | undefined {
  const inline = p.PRIVATE_KEY;
  const path = p.PRIVATE_KEY_PATH;
  if (inline !== undefined && path !== undefined) {
    problems.push('PRIVATE_KEY: set either PRIVATE_KEY or PRIVATE_KEY_PATH, not both');
    return undefined;
  }
  if (inline === undefined && path === undefined) {
    problems.push('PRIVATE_KEY: required (or PRIVATE_KEY_PATH) — the GitHub App private key');
    return undefined;
  }
  let pem: string;
  let name: string;
  if (inline !== undefined) {
    name = 'PRIVATE_KEY';
    pem = inline.includes('-----BEGIN')
      ? inline.replace(/\\n/g, '\n')
      : Buffer.from(inline, 'base64').toString('utf8');
  } else {
    name = 'PRIVATE_KEY_PATH';
    try {
      pem = readFileSync(path!, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      problems.push(`PRIVATE_KEY_PATH: cannot read ${JSON.stringify(path)} (${code})`);
      return undefined;
    }
  }
  if (!pem.includes('-----BEGIN')) {
    problems.push(
      `${name}: not a PEM private key (expected "-----BEGIN ... PRIVATE KEY-----", or its base64)`,
    );
    return undefined;
  }
  try {
    createPrivateKey(pem);
  } catch {
    problems.push(`${name}: the PEM private key cannot be parsed`);
    return undefined;
  }
  return `${pem.trim()}\n`;
}
