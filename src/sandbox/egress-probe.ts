import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { AppError } from '../app-error.js';
import type { Sandbox } from './sandbox.js';

/** A place the sandbox must not reach, e.g. the GitHub host or the model server. */
export interface EgressTarget {
  /** Name for messages and logs (`github`, `model-server`). */
  name: string;
  /**
   * URL whose host and port are probed; without a port: `https:`/`wss:` → 443, `http:`/`ws:` → 80,
   * `redis:`/`rediss:` → 6379 (https://www.iana.org/assignments/service-names-port-numbers).
   */
  url: string;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = {
  'https:': 443,
  'wss:': 443,
  'http:': 80,
  'ws:': 80,
  'redis:': 6379,
  'rediss:': 6379,
};

/** Options of {@link probeEgress}. */
export interface ProbeEgressOptions {
  /** Bound on the probe inside the sandbox, ms; default 5000. */
  timeoutMs?: number;
  /**
   * Resolves a host name on the worker's side to its addresses, which are probed besides the name:
   * a sandbox without DNS could still reach an address. Default `dns.lookup` (all addresses),
   * bounded by 2 s; a name that does not resolve is probed by name only.
   */
  resolve?: (host: string) => Promise<string[]>;
}

const RESOLVE_TIMEOUT_MS = 2_000;

async function resolveAll(host: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      lookup(host, { all: true }).then((list) => list.map((a) => a.address)),
      new Promise<string[]>((resolve) => {
        timer = setTimeout(() => resolve([]), RESOLVE_TIMEOUT_MS);
      }),
    ]);
  } catch {
    return [];
  } finally {
    clearTimeout(timer);
  }
}

/** Outcome of {@link probeEgress}. */
export interface EgressProbeResult {
  /** True when no target could be reached. */
  blocked: boolean;
  /** Names of the targets a TCP connection reached. */
  reached: string[];
}

const DEFAULT_TIMEOUT_MS = 5_000;
const START_MARKER = 'frognano-egress-probe-start';
const DONE_MARKER = 'frognano-egress-probe-done';

/**
 * The probe script, run as `bash -c SCRIPT probe host1 port1 host2 port2 …`: one background
 * connect per target through bash's `/dev/tcp` (needs nothing but bash), printing `reached <i>` as
 * soon as a connection opens. Hosts and ports arrive as arguments, never spliced into the script.
 * A blocked connect either fails at once (no route: a sandbox without network) or hangs (packets
 * dropped by a NetworkPolicy) until the exec timeout kills it; what was printed until then counts.
 */
const PROBE_SCRIPT = [
  `echo ${START_MARKER}`,
  'i=0',
  'while [ "$#" -ge 2 ]; do',
  '  ( exec 3<>"/dev/tcp/$1/$2" && echo "reached $i" ) 2>/dev/null &',
  '  shift 2; i=$((i+1))',
  'done',
  'wait',
  `echo ${DONE_MARKER}`,
].join('\n');

/** Host and port of a target URL (IPv6 brackets removed); throws `EGRESS_PROBE_FAILED` on a bad URL. */
export function egressEndpoint(target: EgressTarget): { host: string; port: number } {
  let url: URL;
  try {
    url = new URL(target.url);
  } catch (err) {
    throw new AppError('EGRESS_PROBE_FAILED', `egress probe target ${target.name} has an invalid URL`, {
      cause: err,
    });
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port !== '' ? Number(url.port) : DEFAULT_PORTS[url.protocol];
  if (port === undefined) {
    throw new AppError(
      'EGRESS_PROBE_FAILED',
      `egress probe target ${target.name} (${url.protocol}) needs an explicit port`,
    );
  }
  if (host === '' || !/^[A-Za-z0-9.:_-]+$/.test(host)) {
    throw new AppError('EGRESS_PROBE_FAILED', `egress probe target ${target.name} has an unusable host`);
  }
  return { host, port };
}

/**
 * From inside `sandbox`, try a TCP connection to the host and port of each target, and to each
 * address the worker resolves its host name to (all in parallel, bounded by `timeoutMs`, default
 * 5000 ms). Uses bash's `/dev/tcp`, so it works in a minimal image. Throws {@link AppError}
 * `EGRESS_PROBE_FAILED` when the probe itself could not run (no bash, the sandbox failed), since
 * "could not tell" must not pass for "blocked".
 */
export async function probeEgress(
  sandbox: Sandbox,
  targets: readonly EgressTarget[],
  options: ProbeEgressOptions = {},
): Promise<EgressProbeResult> {
  if (targets.length === 0) return { blocked: true, reached: [] };
  const resolve = options.resolve ?? resolveAll;
  // One probe per (host or address, port); `owners[i]` is the target name of probe i.
  const owners: string[] = [];
  const args: string[] = [];
  const seen = new Set<string>();
  for (const t of targets) {
    const { host, port } = egressEndpoint(t);
    const addresses = isIP(host) === 0 ? await resolve(host) : [];
    for (const h of [host, ...addresses]) {
      const key = `${h} ${port}`;
      if (seen.has(key) || !/^[A-Za-z0-9.:_-]+$/.test(h)) continue;
      seen.add(key);
      owners.push(t.name);
      args.push(h, String(port));
    }
  }
  const result = await sandbox.exec(['bash', '-c', PROBE_SCRIPT, 'egress-probe', ...args], {
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxOutputBytes: 64 * 1024,
  });
  const stdout = result.stdout.toString('utf8');
  if (!stdout.includes(START_MARKER) || (!result.timedOut && !stdout.includes(DONE_MARKER))) {
    throw new AppError(
      'EGRESS_PROBE_FAILED',
      `the egress probe did not run in the sandbox (exit code ${result.exitCode ?? result.signal}): ${result.stderr.toString('utf8').slice(0, 500)}`,
    );
  }
  const reached = new Set<string>();
  for (const m of stdout.matchAll(/^reached (\d+)$/gm)) {
    const owner = owners[Number(m[1])];
    if (owner) reached.add(owner);
  }
  return { blocked: reached.size === 0, reached: [...reached] };
}

/**
 * {@link probeEgress}, then throw {@link AppError} `EGRESS_NOT_BLOCKED` (not retryable) naming the
 * targets that were reached: the job must not run where the sandbox can talk to the outside (some
 * CNIs ignore NetworkPolicy).
 */
export async function assertEgressBlocked(
  sandbox: Sandbox,
  targets: readonly EgressTarget[],
  options: ProbeEgressOptions = {},
): Promise<void> {
  const result = await probeEgress(sandbox, targets, options);
  if (!result.blocked) {
    const why =
      sandbox.driver === 'kubernetes'
        ? 'this cluster does not enforce NetworkPolicy'
        : 'the sandbox is not offline';
    throw new AppError(
      'EGRESS_NOT_BLOCKED',
      `${why}: from inside the sandbox a TCP connection reached ${result.reached.join(', ')}`,
      { retryable: false, details: { reached: result.reached, driver: sandbox.driver } },
    );
  }
}
