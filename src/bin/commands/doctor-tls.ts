import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { isAppError } from '../../app-error.js';
import { runGit } from '../../git/run-git.js';
import type { DoctorCheck } from './doctor.js';

/**
 * The TLS part of `frognano-bot doctor`: for each HTTPS endpoint the app talks to, whether this
 * process (Node: Octokit, the model client) and git (clone and push) trust its certificate, with the
 * CA bundle named by `NODE_EXTRA_CA_CERTS` / `GIT_SSL_CAINFO` (an internal certificate authority,
 * README "Internal certificate authority"). Plain `http:` endpoints have no TLS and get no check.
 */

/** One endpoint to check. */
export interface TlsTarget {
  /** What it is, for the check's name: `GitHub host`, `model server`. */
  name: string;
  /** Its URL (`https://github.example.com/api/v3`); only `https:` URLs are checked. */
  url: string;
  /** Also check that git trusts it (the GitHub host: the worker clones and pushes over it). */
  git?: boolean;
}

/** Options of {@link checkTls}. */
export interface TlsCheckOptions {
  /** Bound on each handshake or git call, ms. */
  timeoutMs: number;
  /** Where the bundle variables are read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/** Node's verification error codes that a missing or wrong CA bundle causes (OpenSSL's names). */
const UNTRUSTED_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_UNTRUSTED',
]);

/** git's (libcurl's, GnuTLS or OpenSSL builds) messages for a certificate it does not trust. */
const GIT_TLS_FAILURE =
  /server certificate verification failed|SSL certificate problem|certificate verify failed|unable to get local issuer|self[- ]signed certificate|no alternative certificate subject name|certificate is not trusted/i;
const GIT_UNREACHABLE = /Failed to connect|Could not resolve host|Connection refused|timed out/i;

const README_HINT = 'README "Internal certificate authority"';

/**
 * Check the CA bundles named in the environment (when set) and TLS to each `https:` target.
 * Never throws: every problem is a failed {@link DoctorCheck} whose `fix` names the variable to set.
 */
export async function checkTls(
  targets: readonly TlsTarget[],
  options: TlsCheckOptions,
): Promise<DoctorCheck[]> {
  const env = options.env ?? process.env;
  const checks: DoctorCheck[] = [];
  for (const variable of ['NODE_EXTRA_CA_CERTS', 'GIT_SSL_CAINFO'] as const) {
    const path = env[variable];
    if (path) checks.push(checkBundle(variable, path));
  }
  for (const target of targets) {
    let url: URL;
    try {
      url = new URL(target.url);
    } catch {
      continue; // the configuration check reports a malformed URL
    }
    if (url.protocol !== 'https:') continue;
    checks.push(await checkNodeTls(target, url, env.NODE_EXTRA_CA_CERTS, options.timeoutMs));
    if (target.git) checks.push(await checkGitTls(target, url, env.GIT_SSL_CAINFO, options.timeoutMs));
  }
  return checks;
}

/** The bundle file is readable and holds at least one PEM certificate. */
function checkBundle(variable: string, path: string): DoctorCheck {
  const name = `CA bundle ${variable}=${path}`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return {
      name,
      status: 'failed',
      detail: `cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      fix: `mount the CA bundle (PEM) at ${path}, or point ${variable} at where it is mounted (${README_HINT})`,
    };
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const subjects: string[] = [];
  for (const block of blocks) {
    try {
      subjects.push(new X509Certificate(block).subject.replace(/\n/g, ', '));
    } catch (err) {
      return {
        name,
        status: 'failed',
        detail: `a certificate in it does not parse: ${(err as Error).message}`,
        fix: `${variable} must name a file of PEM certificates ("-----BEGIN CERTIFICATE-----" blocks)`,
      };
    }
  }
  if (subjects.length === 0) {
    return {
      name,
      status: 'failed',
      detail: 'it holds no PEM certificate',
      fix: `${variable} must name a file of PEM certificates ("-----BEGIN CERTIFICATE-----" blocks)`,
    };
  }
  return { name, status: 'ok', detail: `${subjects.length} certificate(s), first ${subjects[0]}` };
}

/** A TLS handshake with this process's trust store (system CAs plus NODE_EXTRA_CA_CERTS, read at start). */
async function checkNodeTls(
  target: TlsTarget,
  url: URL,
  bundle: string | undefined,
  timeoutMs: number,
): Promise<DoctorCheck> {
  const name = `TLS to the ${target.name} ${url.host} (Node)`;
  const result = await handshake(url, timeoutMs);
  if (result.ok) return { name, status: 'ok', detail: `certificate issued by ${result.issuer}` };
  const { code, message } = result;
  if (code !== undefined && UNTRUSTED_CODES.has(code)) {
    return {
      name,
      status: 'failed',
      detail: `the certificate is not trusted (${code}: ${message})${bundle ? ` even with NODE_EXTRA_CA_CERTS=${bundle}` : ''}`,
      fix: bundle
        ? `put the CA that issued ${url.hostname}'s certificate (root and intermediates, PEM) into ${bundle}; Node reads NODE_EXTRA_CA_CERTS once at start (${README_HINT})`
        : `mount your internal CA bundle (PEM) and set NODE_EXTRA_CA_CERTS to its path before the process starts (${README_HINT})`,
    };
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return {
      name,
      status: 'failed',
      detail: `the certificate does not name ${url.hostname} (${message})`,
      fix: `use the host name the certificate was issued for (GHE_HOST, MODEL_URL), or reissue it with ${url.hostname} as a subject alternative name`,
    };
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return {
      name,
      status: 'failed',
      detail: `the certificate is out of its validity period (${code})`,
      fix: 'renew the server certificate, and check this machine\u2019s clock',
    };
  }
  return {
    name,
    status: 'failed',
    detail: `no TLS connection: ${code ? `${code}: ` : ''}${message}`,
    fix: 'check the host name and port (GHE_HOST, GHE_PROTOCOL, MODEL_URL), DNS, and the egress NetworkPolicy (deploy/README.md)',
  };
}

type HandshakeResult = { ok: true; issuer: string } | { ok: false; code?: string; message: string };

function handshake(url: URL, timeoutMs: number): Promise<HandshakeResult> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || 443);
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port,
      // SNI takes a host name only (RFC 6066 §3); an IP address is verified against the IP SANs.
      servername: isIP(host) ? undefined : host,
      rejectUnauthorized: true,
      timeout: timeoutMs,
    });
    const done = (result: HandshakeResult): void => {
      socket.destroy();
      resolve(result);
    };
    socket.once('secureConnect', () => {
      const issuer = socket.getPeerCertificate().issuer as Record<string, string> | undefined;
      done({ ok: true, issuer: issuer?.CN ?? issuer?.O ?? 'an unnamed CA' });
    });
    socket.once('timeout', () => done({ ok: false, message: `no answer within ${timeoutMs} ms` }));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done({ ok: false, code: err.code, message: err.message }),
    );
  });
}

/**
 * git's view, with the worker's git environment (GIT_SSL_CAINFO passed through): `git ls-remote` of
 * a repository that does not exist. Any answer from the server (404, 401) proves the handshake; a
 * certificate error is git's own message.
 */
async function checkGitTls(
  target: TlsTarget,
  url: URL,
  bundle: string | undefined,
  timeoutMs: number,
): Promise<DoctorCheck> {
  const name = `TLS to the ${target.name} ${url.host} (git)`;
  const probe = `https://${url.host}/frognano-doctor/tls-probe.git`;
  let stderr: string;
  try {
    await runGit(['ls-remote', '--heads', probe], { timeoutMs });
    return { name, status: 'ok' };
  } catch (err) {
    stderr = isAppError(err, 'GIT_FAILED') && err.details ? err.details.stderr : String(err);
  }
  const line =
    stderr
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? 'git failed';
  if (GIT_TLS_FAILURE.test(stderr)) {
    return {
      name,
      status: 'failed',
      detail: `git does not trust the certificate: ${line}${bundle ? ` (GIT_SSL_CAINFO=${bundle})` : ''}`,
      fix: bundle
        ? `put the CA that issued ${url.hostname}'s certificate (PEM) into ${bundle} (${README_HINT})`
        : `set GIT_SSL_CAINFO to the path of your internal CA bundle (PEM), the same file as NODE_EXTRA_CA_CERTS (${README_HINT})`,
    };
  }
  if (GIT_UNREACHABLE.test(stderr)) {
    return { name, status: 'skipped', detail: `git cannot reach the host: ${line}` };
  }
  // Any other answer (repository not found, authentication required) came over a verified connection.
  return { name, status: 'ok', detail: 'certificate verified' };
}

/**
 * A fix for a request error that is a TLS verification failure (`cause.code` as Node names it), or
 * undefined. Used by the GitHub and model checks so that their "cannot reach" names the CA bundle.
 */
export function tlsFixFor(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNTRUSTED_CODES.has(code)) {
      return `the host's certificate is not trusted (${code}): mount your internal CA bundle and set NODE_EXTRA_CA_CERTS (${README_HINT})`;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
