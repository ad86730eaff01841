import { parseArgs } from 'node:util';
import { AuthorizationV1Api, KubeConfig, VersionApi } from '@kubernetes/client-node';
import { Octokit } from '@octokit/rest';
import { Redis } from 'ioredis';
import jwt from 'jsonwebtoken';
import { isAppError } from '../../app-error.js';
import { loadEnv } from '../../config/env.js';
import { isExampleHost } from '../../config/placeholders.js';
import { createSglangClient, listModels } from '../../llm/sglang-client.js';
import { createSilentLogger, type Logger } from '../../observability/logger.js';
import { probeEgress, type EgressTarget } from '../../sandbox/egress-probe.js';
import { createKubernetesSandboxFactory } from '../../sandbox/kubernetes/kubernetes-sandbox.js';
import {
  createLocalSandboxFactory,
  type LocalEnforcement,
  type LocalSandbox,
} from '../../sandbox/local/local-sandbox.js';
import { probeCgroupSupport, type CgroupSupport } from '../../sandbox/local/sandbox-cgroup.js';
import type { Sandbox, SandboxFactory } from '../../sandbox/sandbox.js';
import { checkTls, tlsFixFor } from './doctor-tls.js';

/**
 * `frognano-bot doctor`: checks an install end to end and says, for each thing that is wrong, how
 * to fix it. Each check prints `✓ name`, `✗ name — fix: …` or `- name — skipped: …`; the exit code
 * is 1 when any check failed. Checks that depend on a failed one are skipped: they are counted apart
 * from the failed ones (the failure they depend on already sets the exit code).
 */

/** Inputs of {@link runDoctorChecks}: the process configuration, as a plain object. */
export interface DoctorOptions {
  github: {
    /** REST API base URL: `https://<GHE host>/api/v3` or `https://api.github.com`. */
    apiUrl: string;
    appId: number;
    /** The App's private key (PEM). Used to sign one JWT; never logged. */
    privateKey: string;
  };
  /** `redis://` or `rediss://` URL of the queue's Redis. */
  redisUrl: string;
  model: {
    /** OpenAI-compatible base URL of SGLang, e.g. `http://frognano-sglang:30000/v1`. */
    url: string;
    name: string;
    apiKey?: string | null;
  };
  sandbox:
    | {
        driver: 'kubernetes';
        kubeConfig: KubeConfig;
        namespace: string;
        image: string;
        runtimeClassName?: string;
        serviceAccountName?: string;
      }
    | {
        driver: 'local';
        factory?: SandboxFactory;
        /** SANDBOX_ALLOW_UNLIMITED: the worker starts sandboxes whose limits do not hold. */
        allowUnlimited?: boolean;
      };
  /**
   * What the egress probe must not reach (SANDBOX_EGRESS_PROBE_TARGETS); default the GitHub API
   * host and the model server.
   */
  egressProbeTargets?: readonly EgressTarget[];
  /** Where NODE_EXTRA_CA_CERTS and GIT_SSL_CAINFO are read for the bundle checks (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Bound on each network check, ms. Default 15 000 (the model request: 4× that). */
  timeoutMs?: number;
  /** Bound on the sandbox pod reaching Running, ms. Default 180 000. */
  sandboxStartTimeoutMs?: number;
  logger?: Logger;
}

/** One check's result. */
export interface DoctorCheck {
  name: string;
  status: 'ok' | 'failed' | 'skipped';
  /** What was found (on success: a short fact; on failure: what is wrong). */
  detail?: string;
  /** How to fix it (failures only). */
  fix?: string;
}

/** The Kubernetes verbs the sandbox driver and the janitor use (deploy/base/rbac.yaml). */
export const DRIVER_ACCESS: readonly {
  verb: string;
  resource: string;
  subresource?: string;
  group?: string;
}[] = [
  { verb: 'create', resource: 'pods' },
  { verb: 'get', resource: 'pods' },
  { verb: 'list', resource: 'pods' },
  { verb: 'delete', resource: 'pods' },
  { verb: 'create', resource: 'pods', subresource: 'exec' },
  { verb: 'create', resource: 'networkpolicies', group: 'networking.k8s.io' },
  { verb: 'list', resource: 'networkpolicies', group: 'networking.k8s.io' },
  { verb: 'delete', resource: 'networkpolicies', group: 'networking.k8s.io' },
];

/** The one tool of the model check: a call must come back parsed. */
const PING_TOOL = {
  type: 'function',
  function: {
    name: 'report_number',
    description: 'Report a number back to the operator.',
    parameters: {
      type: 'object',
      properties: { value: { type: 'integer', description: 'The number to report.' } },
      required: ['value'],
    },
  },
} as const;

const SGLANG_FLAGS = '--reasoning-parser qwen3 --tool-call-parser qwen3_coder';

/**
 * Run every check, in order: the CA bundles and TLS to each `https:` endpoint ({@link checkTls}:
 * Node and git trust), GitHub App, Redis, model server (list, then one tool call), then the
 * sandbox: for Kubernetes the API, each verb of {@link DRIVER_ACCESS} (SelfSubjectAccessReview),
 * a sandbox pod starting from the image; for the local driver a sandbox starting and each of its
 * whole-sandbox limits ({@link localLimitChecks}); then egress from the sandbox to the probe
 * targets being blocked. Never throws: every failure is a {@link DoctorCheck}.
 */
export async function runDoctorChecks(options: DoctorOptions): Promise<DoctorCheck[]> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const checks: DoctorCheck[] = [];
  checks.push(
    ...(await checkTls(
      [
        { name: 'GitHub host', url: options.github.apiUrl, git: true },
        { name: 'model server', url: options.model.url },
      ],
      { timeoutMs, env: options.env },
    )),
  );
  checks.push(...checkPlaceholders(options));
  checks.push(await checkGithub(options, timeoutMs));
  checks.push(await checkRedis(options.redisUrl, timeoutMs));
  checks.push(...(await checkModel(options, timeoutMs)));
  checks.push(...(await checkSandbox(options, timeoutMs)));
  return checks;
}

/** The report: one line per check. */
export function formatDoctorReport(checks: readonly DoctorCheck[]): string {
  const lines = checks.map((c) => {
    if (c.status === 'ok') return `✓ ${c.name}${c.detail ? ` (${c.detail})` : ''}`;
    if (c.status === 'skipped') return `- ${c.name} — skipped: ${c.detail ?? 'an earlier check failed'}`;
    return `✗ ${c.name} — ${c.detail ? `${c.detail}; ` : ''}fix: ${c.fix ?? 'see the message'}`;
  });
  lines.push(summarizeChecks(checks));
  return `${lines.join('\n')}\n`;
}

/**
 * The report's last line: `All 15 checks passed.`, or `2 of 15 checks failed, 3 skipped.` (skipped
 * checks are not counted as failed).
 */
export function summarizeChecks(checks: readonly DoctorCheck[]): string {
  const failed = checks.filter((c) => c.status === 'failed').length;
  const skipped = checks.filter((c) => c.status === 'skipped').length;
  const skippedText = skipped > 0 ? `, ${skipped} skipped` : '';
  if (failed === 0) {
    const passed = checks.length - skipped;
    return skipped === 0
      ? `All ${checks.length} checks passed.`
      : `${passed} of ${checks.length} checks passed${skippedText}.`;
  }
  return `${failed} of ${checks.length} checks failed${skippedText}.`;
}

// -----------------------------------------------------------------------------------------------

async function checkGithub(options: DoctorOptions, timeoutMs: number): Promise<DoctorCheck> {
  const name = `GitHub App ${options.github.appId} at ${options.github.apiUrl}`;
  let token: string;
  try {
    const now = Math.floor(Date.now() / 1000);
    // GitHub App JWT: RS256, iss = App id, at most 10 minutes (GitHub docs "Generating a JWT").
    token = jwt.sign(
      { iat: now - 60, exp: now + 540, iss: String(options.github.appId) },
      options.github.privateKey,
      {
        algorithm: 'RS256',
      },
    );
  } catch (err) {
    return {
      name,
      status: 'failed',
      detail: `the private key cannot sign: ${(err as Error).message}`,
      fix: 'set PRIVATE_KEY (or PRIVATE_KEY_PATH) to the App\u2019s .pem',
    };
  }
  const octokit = new Octokit({
    baseUrl: options.github.apiUrl,
    auth: token,
    request: { timeout: timeoutMs, retries: 0 },
  });
  try {
    const app = await octokit.rest.apps.getAuthenticated();
    if (app.data?.id !== options.github.appId) {
      return {
        name,
        status: 'failed',
        detail: `the host answered for App ${app.data?.id}`,
        fix: 'set APP_ID to the App this key belongs to',
      };
    }
    const installations = await octokit.rest.apps.listInstallations({ per_page: 100 });
    if (installations.data.length === 0) {
      return {
        name,
        status: 'failed',
        detail: 'the App is not installed anywhere',
        fix: `install the App "${app.data.slug}" on an organization or repository`,
      };
    }
    return { name, status: 'ok', detail: `${app.data.slug}, ${installations.data.length} installation(s)` };
  } catch (err) {
    const status = (err as { status?: number }).status;
    const message = (err as Error).message;
    if (status === 401) {
      return {
        name,
        status: 'failed',
        detail: `the host refused the App JWT (401: ${message})`,
        fix: 'check that APP_ID and PRIVATE_KEY belong to the same App, and the clock of this machine',
      };
    }
    if (status === 404) {
      return {
        name,
        status: 'failed',
        detail: `GET /app answered 404 at ${options.github.apiUrl}`,
        fix: 'set GHE_HOST to the Enterprise host name only (no scheme, no /api/v3) and GHE_PROTOCOL',
      };
    }
    // Octokit reports a request that got no response (refused, DNS, TLS) as status 500 without `response`.
    if (status !== undefined && (err as { response?: unknown }).response !== undefined) {
      return {
        name,
        status: 'failed',
        detail: `GET /app answered HTTP ${status}: ${message}`,
        fix: 'check GHE_HOST and that the host is a GitHub Enterprise Server',
      };
    }
    return {
      name,
      status: 'failed',
      detail: `cannot reach the host: ${message}${causeMessage(err)}`,
      fix:
        tlsFixFor(err) ??
        'check GHE_HOST/GHE_PROTOCOL, DNS, and the github-egress NetworkPolicy CIDR (deploy/README.md)',
    };
  }
}

/**
 * The shipped configuration's example values (deploy/base/config.yaml: `github.example.com`,
 * `registry.example.com/…`) left in place: one failed check naming each; nothing when there is none.
 */
function checkPlaceholders(options: DoctorOptions): DoctorCheck[] {
  const values: [string, string][] = [
    ['GHE_HOST', options.github.apiUrl],
    ['MODEL_URL', options.model.url],
    ['REDIS_URL', options.redisUrl],
  ];
  if (options.sandbox.driver === 'kubernetes') values.push(['SANDBOX_IMAGE', options.sandbox.image]);
  return values
    .filter(([, value]) => isExampleHost(value))
    .map(([variable, value]) => ({
      name: `${variable} is this site's own value`,
      status: 'failed' as const,
      detail: `${/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? redactUrl(value) : value} is a placeholder (a reserved example domain)`,
      fix: `set ${variable} to your own ${variable === 'SANDBOX_IMAGE' ? 'image' : 'host'} (deploy/base/config.yaml; deploy/README.md, "Edit the configuration")`,
    }));
}

async function checkRedis(url: string, timeoutMs: number): Promise<DoctorCheck> {
  const name = `Redis at ${redactUrl(url)}`;
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const pong = await redis.ping();
    if (pong !== 'PONG')
      return {
        name,
        status: 'failed',
        detail: `PING answered ${pong}`,
        fix: 'REDIS_URL must point at a Redis server',
      };
    let policy: string | undefined;
    try {
      const answer = (await redis.config('GET', 'maxmemory-policy')) as string[];
      policy = answer[1];
    } catch {
      // CONFIG is disabled on some managed Redis services: nothing to check then.
    }
    if (policy !== undefined && policy !== 'noeviction') {
      return {
        name,
        status: 'failed',
        detail: `maxmemory-policy is ${policy}: Redis may evict queued jobs`,
        fix: 'set maxmemory-policy noeviction (redis.conf, or --maxmemory-policy noeviction as in deploy/base/redis.yaml)',
      };
    }
    return { name, status: 'ok' };
  } catch (err) {
    return {
      name,
      status: 'failed',
      detail: `cannot use Redis: ${(err as Error).message}`,
      fix: 'check REDIS_URL (host, port, password, rediss:// for TLS) and that Redis is running',
    };
  } finally {
    redis.disconnect();
  }
}

async function checkModel(options: DoctorOptions, timeoutMs: number): Promise<DoctorCheck[]> {
  const { url, name: model, apiKey } = options.model;
  const listName = `model server at ${url} serves ${model}`;
  let models: string[];
  try {
    models = await listModels(url, apiKey ?? undefined, { timeoutMs });
  } catch (err) {
    return [
      {
        name: listName,
        status: 'failed',
        // A certificate problem is not a server that is down: say only that.
        detail: tlsFixFor(err)
          ? `no TLS connection${causeMessage(err) || `: ${(err as Error).message}`}`
          : (err as Error).message,
        fix: tlsFixFor(err) ?? `check MODEL_URL, and start SGLang with ${SGLANG_FLAGS}`,
      },
      {
        name: 'model server returns parsed tool calls',
        status: 'skipped',
        detail: 'the model server is unreachable',
      },
    ];
  }
  if (!models.includes(model)) {
    return [
      {
        name: listName,
        status: 'failed',
        detail: `it serves ${models.join(', ') || 'no model'}`,
        fix: 'set MODEL_NAME to a served model (or SGLang\u2019s --served-model-name)',
      },
      {
        name: 'model server returns parsed tool calls',
        status: 'skipped',
        detail: 'the model is not served',
      },
    ];
  }
  const toolName = 'model server returns parsed tool calls';
  try {
    const client = createSglangClient({
      baseURL: url,
      model,
      apiKey: apiKey ?? undefined,
      maxRetries: 0,
      requestTimeoutMs: timeoutMs * 4,
      maxCompletionTokens: 2048,
      logger: options.logger,
    });
    const response = await client.complete({
      messages: [
        { role: 'system', content: 'You are a health check. Answer only by calling the tool you are given.' },
        { role: 'user', content: 'Call report_number with value 7.' },
      ],
      tools: [PING_TOOL],
    });
    const calls = response.message.tool_calls ?? [];
    if (response.recoveredToolCalls) {
      return [
        { name: listName, status: 'ok' },
        {
          name: toolName,
          status: 'failed',
          detail: 'the tool call came back as text in the message, not as a parsed tool call',
          fix: `restart SGLang with ${SGLANG_FLAGS}`,
        },
      ];
    }
    if (calls.length === 0) {
      return [
        { name: listName, status: 'ok' },
        {
          name: toolName,
          status: 'failed',
          detail: `no tool call came back (finish_reason ${response.finishReason})`,
          fix: `serve the FrogNano-4B model with ${SGLANG_FLAGS}`,
        },
      ];
    }
    return [
      { name: listName, status: 'ok' },
      { name: toolName, status: 'ok', detail: calls[0]!.function.name },
    ];
  } catch (err) {
    return [
      { name: listName, status: 'ok' },
      {
        name: toolName,
        status: 'failed',
        detail: (err as Error).message,
        fix: `check the server\u2019s log; start SGLang with ${SGLANG_FLAGS}`,
      },
    ];
  }
}

/**
 * Local driver: commands run under the launcher's seccomp filter (libseccomp), without
 * capabilities, without nested user namespaces, and (when bubblewrap does not run as host root) in
 * a pid namespace of their own. Read from inside a command, as the model's commands see it.
 */
export async function checkCommandIsolation(sandbox: Sandbox, timeoutMs: number): Promise<DoctorCheck> {
  const name = 'local sandbox commands run under the seccomp filter (sandbox-exec)';
  const fix =
    'install the Debian packages gcc and libseccomp-dev (scripts/setup.sh), run npm run build:native, and use bubblewrap 0.8 or later (--disable-userns)';
  try {
    const r = await sandbox.exec(
      'grep -E "^(Seccomp|NoNewPrivs|CapEff):" /proc/self/status; unshare -Ur true 2>/dev/null && echo userns-allowed; echo "pid $$"',
      { timeoutMs },
    );
    const out = r.stdout.toString();
    const problems = [
      /Seccomp:\s+2/.test(out) ? '' : 'no seccomp filter',
      /NoNewPrivs:\s+1/.test(out) ? '' : 'no_new_privs unset',
      /CapEff:\s+0+\n/.test(out) ? '' : 'commands hold capabilities',
      out.includes('userns-allowed') ? 'nested user namespaces allowed' : '',
    ].filter(Boolean);
    if (problems.length > 0) return { name, status: 'failed', detail: problems.join(', '), fix };
    return {
      name,
      status: 'ok',
      detail: out.includes('pid 2\n')
        ? 'no capabilities, no nested user namespaces, own pid namespace per command'
        : 'no capabilities, no nested user namespaces; the agent\u2019s pid namespace (bubblewrap runs as host root)',
    };
  } catch (err) {
    return { name, status: 'failed', detail: (err as Error).message, fix };
  }
}

async function checkSandbox(options: DoctorOptions, timeoutMs: number): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  const sandboxOptions = options.sandbox;
  let factory: SandboxFactory;
  let where: string;
  if (sandboxOptions.driver === 'kubernetes') {
    const { kubeConfig, namespace } = sandboxOptions;
    where = `namespace ${namespace}`;
    const apiName = `Kubernetes API at ${kubeConfig.getCurrentCluster()?.server ?? '(no cluster)'}`;
    try {
      const version = await withTimeout(kubeConfig.makeApiClient(VersionApi).getCode(), timeoutMs);
      checks.push({ name: apiName, status: 'ok', detail: version.gitVersion });
    } catch (err) {
      checks.push({
        name: apiName,
        status: 'failed',
        detail: kubeMessage(err),
        fix: 'in a pod: the worker\u2019s ServiceAccount token must be mounted and the apiserver-egress NetworkPolicy CIDR right; elsewhere: set KUBECONFIG',
      });
      for (const a of DRIVER_ACCESS)
        checks.push({
          name: accessName(a, namespace),
          status: 'skipped',
          detail: 'the Kubernetes API is unreachable',
        });
      checks.push({
        name: `sandbox pod starts from ${sandboxOptions.image}`,
        status: 'skipped',
        detail: 'the Kubernetes API is unreachable',
      });
      checks.push({ name: 'egress from a sandbox is blocked', status: 'skipped', detail: 'no sandbox' });
      return checks;
    }
    const authz = kubeConfig.makeApiClient(AuthorizationV1Api);
    let allAllowed = true;
    for (const a of DRIVER_ACCESS) {
      const name = accessName(a, namespace);
      try {
        const review = await withTimeout(
          authz.createSelfSubjectAccessReview({
            body: {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SelfSubjectAccessReview',
              spec: {
                resourceAttributes: {
                  namespace,
                  verb: a.verb,
                  resource: a.resource,
                  subresource: a.subresource,
                  group: a.group ?? '',
                },
              },
            },
          }),
          timeoutMs,
        );
        if (review.status?.allowed) checks.push({ name, status: 'ok' });
        else {
          allAllowed = false;
          checks.push({
            name,
            status: 'failed',
            detail: `not allowed${review.status?.reason ? ` (${review.status.reason})` : ''}`,
            fix: `apply deploy/base/rbac.yaml: Role frognano-sandbox-driver in ${namespace}, bound to the worker\u2019s ServiceAccount`,
          });
        }
      } catch (err) {
        allAllowed = false;
        checks.push({
          name,
          status: 'failed',
          detail: kubeMessage(err),
          fix: 'check that the namespace exists and the credentials are valid',
        });
      }
    }
    if (!allAllowed) {
      checks.push({
        name: `sandbox pod starts from ${sandboxOptions.image}`,
        status: 'skipped',
        detail: 'missing permissions',
      });
      checks.push({ name: 'egress from a sandbox is blocked', status: 'skipped', detail: 'no sandbox' });
      return checks;
    }
    factory = createKubernetesSandboxFactory({
      kubeConfig,
      namespace,
      image: sandboxOptions.image,
      runtimeClassName: sandboxOptions.runtimeClassName,
      serviceAccountName: sandboxOptions.serviceAccountName,
      cpuCores: 0.5,
      memoryMiB: 256,
      workspaceMiB: 64,
      tmpMiB: 64,
      jobTimeLimitMs: 5 * 60_000,
      startTimeoutMs: options.sandboxStartTimeoutMs ?? 180_000,
      logger: options.logger,
    });
  } else {
    // `warn`: doctor reports each limit that does not hold rather than failing at the start.
    factory =
      sandboxOptions.factory ??
      createLocalSandboxFactory({
        logger: options.logger,
        unenforcedLimits: 'warn',
        onUnenforced: () => undefined,
      });
    where = 'bubblewrap';
  }

  const startName =
    sandboxOptions.driver === 'kubernetes'
      ? `sandbox pod starts from ${sandboxOptions.image}`
      : 'local sandbox (bubblewrap) starts';
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await factory.create({ jobId: `doctor-${Date.now().toString(36)}` });
    const r = await sandbox.exec(['sh', '-c', 'id -u; command -v bash git python3 tar sha256sum setsid'], {
      timeoutMs,
    });
    if (r.exitCode !== 0) {
      checks.push({
        name: startName,
        status: 'failed',
        detail: `the image lacks tools: ${r.stdout.toString().trim().replace(/\n/g, ' ')}`,
        fix: 'build the sandbox image FROM deploy/docker/sandbox.Dockerfile (bash, git, python3, tar, coreutils, util-linux)',
      });
    } else
      checks.push({
        name: startName,
        status: 'ok',
        detail: `${where}, uid ${r.stdout.toString().split('\n')[0]}`,
      });
  } catch (err) {
    checks.push({
      name: startName,
      status: 'failed',
      detail: isAppError(err) ? err.message.split('; fix: ')[0] : (err as Error).message,
      fix:
        isAppError(err) && err.message.includes('; fix: ')
          ? err.message.split('; fix: ')[1]
          : 'see the message',
    });
    checks.push({ name: 'egress from a sandbox is blocked', status: 'skipped', detail: 'no sandbox' });
    await sandbox?.destroy();
    return checks;
  }

  if (sandboxOptions.driver === 'local' && 'enforced' in sandbox) {
    const enforced = (sandbox as LocalSandbox).enforced;
    const support = await probeCgroupSupport(options.logger ?? createSilentLogger());
    checks.push(...localLimitChecks(enforced, support, sandboxOptions.allowUnlimited === true));
  }

  if (sandboxOptions.driver !== 'kubernetes') checks.push(await checkCommandIsolation(sandbox, timeoutMs));

  const targets: readonly EgressTarget[] = options.egressProbeTargets ?? [
    { name: 'GitHub host', url: options.github.apiUrl },
    { name: 'model server', url: options.model.url },
  ];
  try {
    const result = await probeEgress(sandbox, targets, { timeoutMs: Math.min(timeoutMs, 5000) });
    if (result.blocked)
      checks.push({
        name: 'egress from a sandbox is blocked',
        status: 'ok',
        detail: targets.map((t) => t.name).join(', '),
      });
    else {
      checks.push({
        name: 'egress from a sandbox is blocked',
        status: 'failed',
        detail: `${sandboxOptions.driver === 'kubernetes' ? 'this cluster does not enforce NetworkPolicy' : 'the local sandbox is online'}: a sandbox reached ${targets
          .filter((t) => result.reached.includes(t.name))
          .map((t) => t.name)
          .join(' and ')}`,
        fix:
          sandboxOptions.driver === 'kubernetes'
            ? 'use a CNI that enforces NetworkPolicy (Calico, Cilium, Antrea…; not flannel or the k3s default) — see deploy/README.md'
            : 'the local sandbox must run in its own network namespace (bubblewrap --unshare-net)',
      });
    }
  } catch (err) {
    checks.push({
      name: 'egress from a sandbox is blocked',
      status: 'failed',
      detail: (err as Error).message,
      fix: 'the sandbox image needs bash',
    });
  } finally {
    await sandbox.destroy();
  }
  return checks;
}

const CONTROLLERS_NEEDED =
  'the memory and pids controllers: cgroup v1 hierarchies mounted at /sys/fs/cgroup/memory and /sys/fs/cgroup/pids with the worker as root, or cgroup v2 with memory and pids delegated to the worker (systemd: Delegate=yes; they must be listed in its cgroup.controllers)';

function describeBase(support: CgroupSupport, controller: 'memory' | 'pids'): string {
  const base = support[controller];
  return 'dir' in base ? `cgroup v${base.version} ${controller} under ${base.dir}` : base.missing;
}

/**
 * One check per whole-sandbox limit of the local driver (DEFAULT_LOCAL_LIMITS in
 * sandbox/local/local-sandbox.ts), each enforced or not with the fix. A limit that does not hold
 * is a failure whether or not SANDBOX_ALLOW_UNLIMITED lets the worker run anyway; the detail says
 * which. Kernel-surface checks (seccomp, nested user namespaces) go alongside these.
 */
export function localLimitChecks(
  enforced: LocalEnforcement,
  support: CgroupSupport,
  allowUnlimited: boolean,
): DoctorCheck[] {
  const consequence = allowUnlimited
    ? 'not enforced (SANDBOX_ALLOW_UNLIMITED=true: the worker runs sandboxes without it)'
    : 'not enforced: the worker refuses to start sandboxes (SANDBOX_ALLOW_UNLIMITED=true would run them without it)';
  const check = (name: string, ok: boolean, okDetail: string, why: string, fix: string): DoctorCheck =>
    ok
      ? { name, status: 'ok', detail: okDetail }
      : { name, status: 'failed', detail: `${consequence}; ${why}`, fix };
  return [
    check(
      'sandbox memory limit (all processes, /tmp and /dev/shm included)',
      enforced.memory,
      describeBase(support, 'memory'),
      describeBase(support, 'memory'),
      `give the worker ${CONTROLLERS_NEEDED}`,
    ),
    check(
      'swap cannot stretch the sandbox memory limit',
      enforced.swap,
      'swap limited to 0, or no swap on this host',
      'the kernel does not account swap per cgroup',
      'on cgroup v1 boot with swapaccount=1 (memory.memsw.*), or turn swap off (swapoff -a); cgroup v2 has memory.swap.max',
    ),
    check(
      'sandbox process limit',
      enforced.processes,
      describeBase(support, 'pids'),
      describeBase(support, 'pids'),
      `give the worker ${CONTROLLERS_NEEDED}`,
    ),
    check(
      'sandbox workspace size limit',
      enforced.disk,
      'a loop-mounted ext4 file system per sandbox',
      'the workspace is a plain host directory',
      'run the worker as root with loop devices (/dev/loop-control) and mke2fs (apt-get install e2fsprogs)',
    ),
    check(
      'sandbox runs as an unprivileged host uid',
      enforced.unprivileged,
      'not uid 0 on the host',
      'the worker runs as root and cannot drop to another uid',
      'install setpriv (apt-get install util-linux), or run the worker as a non-root user',
    ),
  ];
}

function accessName(a: (typeof DRIVER_ACCESS)[number], namespace: string): string {
  return `may ${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''} in ${namespace}`;
}

function kubeMessage(err: unknown): string {
  const e = err as { code?: unknown; body?: unknown; message?: string };
  if (typeof e.code === 'number') {
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? '');
    const message = /"message":"([^"]*)"/.exec(body)?.[1];
    return `HTTP ${e.code}${message ? `: ${message}` : ''}`;
  }
  return e.message ?? String(err);
}

/** `: <message of the innermost cause>` when it says more than the error itself (fetch's "fetch failed"). */
function causeMessage(err: unknown): string {
  let e: unknown = err;
  let innermost: string | undefined;
  for (let depth = 0; depth < 5 && e && typeof e === 'object'; depth++) {
    const cause = (e as { cause?: unknown }).cause;
    if (cause instanceof Error) innermost = cause.message;
    e = cause;
  }
  const own = err instanceof Error ? err.message : '';
  return innermost && !own.includes(innermost) ? ` (${innermost})` : '';
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '(invalid URL)';
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const USAGE = `usage: frognano-bot doctor [--json]

Checks the install this process is configured for (the same environment variables as
\`serve\` and \`worker\`): TLS to the GitHub host and the model server (with the CA bundle of
NODE_EXTRA_CA_CERTS / GIT_SSL_CAINFO), GitHub App and host, Redis, the model server (one tool call),
and the sandbox driver (Kubernetes permissions, a sandbox pod starting; local: each whole-sandbox
limit enforced or not, with the fix; egress blocked to SANDBOX_EGRESS_PROBE_TARGETS).
Exit code 0 when no check failed (skipped checks, shown with "-", do not count), 1 when one
failed, 2 for a usage error.
`;

/**
 * Entry point of `frognano-bot doctor [--json]`. Reads the environment (`config/env.ts`; the
 * cluster from KUBECONFIG or, in a pod, its ServiceAccount), prints the report (or the checks as
 * JSON) on stdout. A configuration error is reported as a failed `configuration` check.
 *
 * @returns 0 when every check passed, 1 when one failed, 2 for a usage error.
 */
export async function main(argv: string[]): Promise<number> {
  let values: { json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let options: DoctorOptions;
  try {
    const env = loadEnv();
    let sandbox: DoctorOptions['sandbox'];
    if (env.sandboxDriver === 'kubernetes') {
      if (!env.sandboxImage) throw new Error('SANDBOX_IMAGE: required when SANDBOX_DRIVER is kubernetes');
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromDefault();
      sandbox = {
        driver: 'kubernetes',
        kubeConfig,
        namespace: env.sandboxNamespace,
        image: env.sandboxImage,
        runtimeClassName: env.sandboxRuntimeClass ?? undefined,
        serviceAccountName: env.sandboxServiceAccount ?? undefined,
      };
    } else sandbox = { driver: 'local', allowUnlimited: env.sandboxAllowUnlimited };
    options = {
      egressProbeTargets: env.egressProbeTargets,
      github: { apiUrl: env.githubApiUrl, appId: env.appId, privateKey: env.privateKey },
      redisUrl: env.redisUrl,
      model: { url: env.modelUrl, name: env.modelName, apiKey: env.modelApiKey },
      sandbox,
      logger: createSilentLogger(),
    };
  } catch (err) {
    const check: DoctorCheck = {
      name: 'configuration',
      status: 'failed',
      // One problem per line, so a long list of missing variables stays readable.
      detail: `${(err as Error).message.trim().replace(/\n\s*/g, '\n    ')}\n  (the other checks need a valid configuration)`,
      fix: 'set the variables named (README, "Environment variables")',
    };
    process.stdout.write(values.json ? `${JSON.stringify([check], null, 2)}\n` : formatDoctorReport([check]));
    return 1;
  }
  const checks = await runDoctorChecks(options);
  process.stdout.write(values.json ? `${JSON.stringify(checks, null, 2)}\n` : formatDoctorReport(checks));
  return checks.some((c) => c.status === 'failed') ? 1 : 0;
}
