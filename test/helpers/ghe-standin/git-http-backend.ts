import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { gitEnv } from './bare-repos.js';
import type { AppAuth } from './app-auth.js';
import { isoNow, type GheStore, type PushRecord, type RepoRecord } from './ghe-store.js';

/** `/{owner}/{name}.git/{rest}` */
export const GIT_PATH = /^\/([^/]+)\/([^/]+?)\.git(\/.*)?$/;

export interface GitHttpOptions {
  store: GheStore;
  auth: AppAuth;
  /** Root under which the per-request push logs are written. */
  tmpDir: string;
  /** Called with the ref updates of a receive-pack request, before its response ends. */
  onPush(repo: RepoRecord, pushes: PushRecord[]): Promise<void>;
}

/** Username of HTTP Basic credentials when the password is a valid installation token; else null. */
function authenticate(header: string | undefined, auth: AppAuth): string | null {
  const m = /^basic\s+(\S+)$/i.exec(header ?? '');
  if (!m?.[1]) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  // GitHub documents `x-access-token` as the username and accepts any non-empty one.
  if (user === '' || !auth.checkInstallationToken(password).ok) return null;
  return user;
}

/** Split a CGI response head (`Name: value` lines) into a status and headers. */
function parseCgiHead(head: string): { status: number; headers: Array<[string, string]> } {
  let status = 200;
  const headers: Array<[string, string]> = [];
  for (const line of head.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500;
    else headers.push([name, value]);
  }
  return { status, headers };
}

let pushLogCounter = 0;

/**
 * Serve git smart HTTP for one request by running `git http-backend` as a CGI program
 * (environment per RFC 3875 and git-http-backend(1)), with installation-token Basic auth.
 * Unknown repository: 404; missing or invalid credentials: 401 with `WWW-Authenticate: Basic`.
 */
export async function serveGitHttp(
  req: IncomingMessage,
  res: ServerResponse,
  options: GitHttpOptions,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://stand-in');
  const match = GIT_PATH.exec(url.pathname);
  const [, owner = '', name = '', rest = '/'] = match ?? [];
  const repo = options.store.repo(decodeURIComponent(owner), decodeURIComponent(name));
  const service =
    url.searchParams.get('service') ?? /^\/(git-upload-pack|git-receive-pack)$/.exec(rest)?.[1] ?? null;
  const record = {
    method: req.method ?? 'GET',
    owner: repo?.owner ?? owner,
    repo: repo?.name ?? name,
    pathInfo: rest,
    service,
    authenticated: false,
    status: undefined as number | undefined,
  };
  options.store.gitRequests.push(record);
  const finish = (status: number, headers: Record<string, string>, body: string) => {
    record.status = status;
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
    res.end(body);
  };

  if (!repo) {
    req.resume();
    return finish(404, {}, 'Repository not found.\n');
  }
  const user = authenticate(req.headers.authorization, options.auth);
  if (user === null) {
    req.resume();
    return finish(
      401,
      { 'WWW-Authenticate': 'Basic realm="GitHub"' },
      'Invalid username or token. Password authentication is not supported for Git operations.\n',
    );
  }
  record.authenticated = true;

  const pushLog = path.join(options.tmpDir, `push-${process.pid}-${++pushLogCounter}.log`);
  const child = spawn('git', ['http-backend'], {
    env: gitEnv({
      GIT_PROJECT_ROOT: path.dirname(path.dirname(repo.dir)),
      GIT_HTTP_EXPORT_ALL: '1',
      // Canonical case on disk, whatever case the client used.
      PATH_INFO: `/${repo.owner}/${repo.name}.git${rest}`,
      QUERY_STRING: url.search.replace(/^\?/, ''),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      ...(req.headers['content-length'] ? { CONTENT_LENGTH: req.headers['content-length'] } : {}),
      ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
      ...(typeof req.headers['git-protocol'] === 'string'
        ? { HTTP_GIT_PROTOCOL: req.headers['git-protocol'] }
        : {}),
      REMOTE_USER: user,
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
      GHE_STANDIN_PUSH_LOG: pushLog,
    }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stderr: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => stderr.push(c));
  child.stdin.on('error', () => undefined);
  req.pipe(child.stdin);

  let headDone = false;
  let pending = Buffer.alloc(0);
  child.stdout.on('data', (chunk: Buffer) => {
    if (headDone) {
      res.write(chunk);
      return;
    }
    pending = Buffer.concat([pending, chunk]);
    const text = pending.toString('latin1');
    const crlf = text.indexOf('\r\n\r\n');
    const lf = text.indexOf('\n\n');
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : -1;
    if (end < 0) return;
    headDone = true;
    const { status, headers } = parseCgiHead(text.slice(0, end));
    record.status = status;
    res.statusCode = status;
    for (const [k, v] of headers) res.setHeader(k, v);
    res.write(pending.subarray(end));
  });

  const exitCode = await new Promise<number | null>((resolve) => {
    child.on('error', () => resolve(-1));
    child.on('close', (code) => resolve(code));
  });
  if (!headDone) {
    return finish(
      500,
      {},
      `git http-backend failed (exit ${String(exitCode)}): ${Buffer.concat(stderr).toString()}`,
    );
  }
  if (service === 'git-receive-pack' && rest === '/git-receive-pack') {
    const log = await readFile(pushLog, 'utf8').catch(() => '');
    await rm(pushLog, { force: true });
    const at = isoNow();
    const pushes: PushRecord[] = log
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((parts): parts is [string, string, string] => parts.length === 3)
      .map(([oldSha, newSha, ref]) => ({
        owner: repo.owner,
        repo: repo.name,
        ref,
        oldSha,
        newSha,
        user,
        at,
      }));
    if (pushes.length > 0) {
      options.store.pushes.push(...pushes);
      await options.onPush(repo, pushes);
    }
  }
  res.end();
}
