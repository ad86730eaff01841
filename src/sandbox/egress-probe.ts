import { AppError } from '../app-error.js';
import type { Sandbox } from './sandbox.js';

/** A place the sandbox must not reach, e.g. the GitHub host or the model server. */
export interface EgressTarget {
  /** Name for messages and logs (`github`, `model-server`). */
  name: string;
  /** URL whose host and port are probed (`https:` → 443 and `http:` → 80 unless a port is given). */
  url: string;
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
  const port =
    url.port !== '' ? Number(url.port) : url.protocol === 'http:' || url.protocol === 'ws:' ? 80 : 443;
  if (host === '' || !/^[A-Za-z0-9.:_-]+$/.test(host)) {
    throw new AppError('EGRESS_PROBE_FAILED', `egress probe target ${target.name} has an unusable host`);
  }
  return { host, port };
}

/**
 * From inside `sandbox`, try a TCP connection to the host and port of each target (all in
 * parallel, bounded by `timeoutMs`, default 5000 ms). Uses bash's `/dev/tcp`, so it works in a
 * minimal image. Throws {@link AppError} `EGRESS_PROBE_FAILED` when the probe itself could not
 * run (no bash, the sandbox failed), since "could not tell" must not pass for "blocked".
 */
export async function probeEgress(
  sandbox: Sandbox,
  targets: readonly EgressTarget[],
  options: { timeoutMs?: number } = {},
): Promise<EgressProbeResult> {
  if (targets.length === 0) return { blocked: true, reached: [] };
  const args = targets.flatMap((t) => {
    const { host, port } = egressEndpoint(t);
    return [host, String(port)];
  });
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
    const target = targets[Number(m[1])];
    if (target) reached.add(target.name);
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
  options: { timeoutMs?: number } = {},
): Promise<void> {
  const result = await probeEgress(sandbox, targets, options);
  if (!result.blocked) {
    throw new AppError(
      'EGRESS_NOT_BLOCKED',
      `this cluster does not enforce NetworkPolicy: from inside the sandbox a TCP connection reached ${result.reached.join(', ')}`,
      { retryable: false, details: { reached: result.reached, driver: sandbox.driver } },
    );
  }
}
