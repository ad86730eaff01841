import type { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import querystring from 'node:querystring';
import type { KubeConfig } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { z } from 'zod';

/**
 * One exec call into a pod container over the Kubernetes exec WebSocket API
 * (`GET /api/v1/namespaces/{ns}/pods/{pod}/exec`, subprotocol `v4.channel.k8s.io`; see the
 * Kubernetes docs "Kubelet API / remote command" and apimachinery's `wsstream`): every binary frame
 * starts with a channel byte: 0 stdin (client → server), 1 stdout, 2 stderr, 3 status (a JSON
 * `metav1.Status`, sent once the command ended). A non-zero exit is a `Failure` status with reason
 * `NonZeroExitCode` and the code in `details.causes[reason=ExitCode].message`
 * (kubernetes/kubernetes#61346).
 *
 * Authentication and TLS come from `@kubernetes/client-node`'s `KubeConfig.applyToHTTPSOptions`.
 * The library's `Exec.exec` is not used: its promise resolves when the socket opens, not when the
 * command ends (kubernetes-client/javascript#704), it offers `v5.channel.k8s.io` first, and on v4
 * it closes the whole socket when stdin ends, which loses the output. Here stdin is sent as frames
 * and never "closed": the in-pod wrapper reads exactly the announced number of bytes.
 */

/** The WebSocket subprotocol spoken (the one every API server since 1.4 supports). */
export const EXEC_SUBPROTOCOL = 'v4.channel.k8s.io';

/** Exec status (channel 3), validated: it comes from outside. */
export const execStatusSchema = z.looseObject({
  status: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  details: z
    .looseObject({
      causes: z
        .array(z.looseObject({ reason: z.string().optional(), message: z.string().optional() }))
        .optional(),
    })
    .optional(),
});
export type ExecStatus = z.infer<typeof execStatusSchema>;

/**
 * The exit code a status reports: 0 for `Success`, the `ExitCode` cause for `NonZeroExitCode`,
 * `null` for any other failure (the command could not run, the container is gone…).
 */
export function exitCodeFromStatus(status: ExecStatus): number | null {
  if (status.status === 'Success') return 0;
  if (status.reason === 'NonZeroExitCode') {
    const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
    const code = cause?.message === undefined ? Number.NaN : Number(cause.message);
    return Number.isInteger(code) ? code : null;
  }
  return null;
}

/**
 * Collects one output channel: keeps the first `maxBytes` bytes and the last {@link TAIL_BYTES}
 * bytes (where the wrapper's trailer is), counts the rest.
 */
export class OutputCollector {
  static readonly TAIL_BYTES = 512;
  readonly #max: number;
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  #tail: Buffer = Buffer.alloc(0);
  /** Bytes received in all. */
  total = 0;

  constructor(maxBytes: number) {
    this.#max = maxBytes;
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.#headBytes < this.#max) {
      const part = chunk.subarray(0, this.#max - this.#headBytes);
      this.#head.push(Buffer.from(part));
      this.#headBytes += part.length;
    }
    const keep = OutputCollector.TAIL_BYTES;
    if (chunk.length >= keep) this.#tail = Buffer.from(chunk.subarray(chunk.length - keep));
    else {
      const joined = Buffer.concat([this.#tail, chunk]);
      this.#tail = joined.length > keep ? Buffer.from(joined.subarray(joined.length - keep)) : joined;
    }
  }

  /** The last bytes received (at most {@link OutputCollector.TAIL_BYTES}). */
  tail(): Buffer {
    return this.#tail;
  }

  /** The first `min(maxBytes, length)` bytes of the first `length` bytes received. */
  head(length: number): Buffer {
    const all = this.#head.length === 1 ? this.#head[0]! : Buffer.concat(this.#head);
    return all.subarray(0, Math.min(length, all.length));
  }
}

/** Why an exec could not be opened (HTTP status of the refused upgrade), or the socket failed. */
export class PodExecError extends Error {
  /** HTTP status of the refused upgrade; `undefined` for network errors and cut streams. */
  readonly httpStatus: number | undefined;
  /**
   * `connect`: never opened; `cut`: closed before a status arrived; `deadline`: `hardTimeoutMs`
   * passed or `cancel` fired first (the socket was closed by us).
   */
  readonly phase: 'connect' | 'cut' | 'deadline';

  constructor(
    message: string,
    phase: 'connect' | 'cut' | 'deadline',
    httpStatus?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PodExecError';
    this.phase = phase;
    this.httpStatus = httpStatus;
  }
}

/** Input of {@link execInPod}. */
export interface PodExecRequest {
  kubeConfig: KubeConfig;
  namespace: string;
  pod: string;
  container: string;
  /** argv run in the container (no shell unless you give one). */
  command: readonly string[];
  /** Bytes sent on stdin, in order (buffers, then the stream's chunks). Never closed (v4). */
  stdin?: { buffers?: Buffer[]; stream?: Readable };
  /** Bytes kept at the head of each of stdout and stderr. */
  maxOutputBytes: number;
  /**
   * Host-side deadline of the whole call in milliseconds (the command's timeout plus a grace):
   * then the socket is closed and the call fails with phase `deadline`. Command timeouts are
   * enforced inside the pod; this bounds what the pod can make the worker wait.
   */
  hardTimeoutMs: number;
  /** Ends the call at once with phase `deadline` when it fires (a cancelled call's grace ran out). */
  cancel?: AbortSignal;
  /** Interval of WebSocket pings keeping idle connections (proxies, load balancers) open, ms. */
  pingIntervalMs?: number;
}

/** What came back from an exec. `status` is null when the socket closed without one. */
export interface PodExecResponse {
  stdout: OutputCollector;
  stderr: OutputCollector;
  status: ExecStatus | null;
}

const MAX_FRAME_BYTES = 256 * 1024;

/**
 * Run one exec and collect its output until the status frame arrives (then the socket is closed
 * by us) or the socket closes. Never interprets the output: see the sandbox for trailers.
 *
 * @throws PodExecError `connect` when the upgrade is refused (`httpStatus`: 404 pod gone, 400 pod
 *   not running, 403 forbidden…) or the server cannot be reached; `cut` when the socket closes or
 *   errors before a status frame; `deadline` when `hardTimeoutMs` passes or `cancel` fires.
 */
export async function execInPod(request: PodExecRequest): Promise<PodExecResponse> {
  const cluster = request.kubeConfig.getCurrentCluster();
  if (!cluster) throw new PodExecError('the kubeconfig has no current cluster', 'connect');
  const query = querystring.stringify({
    command: [...request.command],
    container: request.container,
    stdin: true,
    stdout: true,
    stderr: true,
    tty: false,
  });
  const base = cluster.server.replace(/^http/, 'ws').replace(/\/+$/, '');
  const url = `${base}/api/v1/namespaces/${encodeURIComponent(request.namespace)}/pods/${encodeURIComponent(request.pod)}/exec?${query}`;
  const opts: WebSocket.ClientOptions = {};
  await request.kubeConfig.applyToHTTPSOptions(opts);

  const stdout = new OutputCollector(request.maxOutputBytes);
  const stderr = new OutputCollector(request.maxOutputBytes);

  return new Promise<PodExecResponse>((resolve, reject) => {
    const ws = new WebSocket(url, [EXEC_SUBPROTOCOL], { ...opts, perMessageDeflate: false, maxPayload: 0 });
    let status: ExecStatus | null = null;
    let opened = false;
    let settled = false;
    let ping: NodeJS.Timeout | undefined;

    const finish = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(hard);
      request.cancel?.removeEventListener('abort', onCancel);
      if (ping) clearInterval(ping);
      request.stdin?.stream?.destroy();
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
      if (err) reject(err);
      else resolve({ stdout, stderr, status });
    };
    const hard = setTimeout(
      () => finish(new PodExecError(`exec did not end within ${request.hardTimeoutMs} ms`, 'deadline')),
      request.hardTimeoutMs,
    );
    const onCancel = (): void =>
      finish(new PodExecError('exec did not end within its grace after it was cancelled', 'deadline'));
    if (request.cancel?.aborted) onCancel();
    request.cancel?.addEventListener('abort', onCancel, { once: true });

    ws.on('unexpected-response', (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8').slice(0, 2000);
        let message = body;
        try {
          const parsed = execStatusSchema.safeParse(JSON.parse(body));
          if (parsed.success && parsed.data.message) message = parsed.data.message;
        } catch {
          // not JSON: keep the text
        }
        finish(
          new PodExecError(`exec refused (HTTP ${res.statusCode}): ${message}`, 'connect', res.statusCode),
        );
      });
      res.on('error', () =>
        finish(new PodExecError(`exec refused (HTTP ${res.statusCode})`, 'connect', res.statusCode)),
      );
    });
    ws.on('open', () => {
      opened = true;
      if (ws.protocol !== EXEC_SUBPROTOCOL) {
        finish(
          new PodExecError(
            `the server chose subprotocol "${ws.protocol}", not ${EXEC_SUBPROTOCOL}`,
            'connect',
          ),
        );
        return;
      }
      const interval = request.pingIntervalMs ?? 30_000;
      ping = setInterval(() => {
        if (ws.readyState === WebSocket.OPEN) ws.ping();
      }, interval);
      ping.unref();
      sendStdin(ws, request.stdin).catch((err: unknown) => {
        // A send failing means the socket is going away; the close handler reports it.
        if (!settled && ws.readyState !== WebSocket.OPEN) return;
        finish(
          new PodExecError(`sending stdin failed: ${(err as Error).message}`, 'cut', undefined, {
            cause: err,
          }),
        );
      });
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (settled) return;
      const frame = isBinary ? data : Buffer.from(data);
      if (frame.length === 0) return;
      const channel = frame[0];
      const payload = frame.subarray(1);
      if (channel === 1) stdout.push(payload);
      else if (channel === 2) stderr.push(payload);
      else if (channel === 3) {
        if (payload.length === 0) return;
        try {
          const parsed = execStatusSchema.safeParse(JSON.parse(payload.toString('utf8')));
          status = parsed.success ? parsed.data : { status: 'Failure', message: 'unparseable exec status' };
        } catch {
          status = { status: 'Failure', message: payload.toString('utf8').slice(0, 500) };
        }
        finish(null);
      }
    });
    ws.on('error', (err) => {
      finish(
        new PodExecError(`exec socket error: ${err.message}`, opened ? 'cut' : 'connect', undefined, {
          cause: err,
        }),
      );
    });
    ws.on('close', (code) => {
      if (!opened) return; // 'unexpected-response' or 'error' reports it
      if (status) finish(null);
      else
        finish(
          new PodExecError(`exec stream closed (code ${code}) before the command's status arrived`, 'cut'),
        );
    });
  });
}

async function sendStdin(ws: WebSocket, stdin: PodExecRequest['stdin']): Promise<void> {
  if (!stdin) return;
  for (const buffer of stdin.buffers ?? []) await sendChunk(ws, buffer);
  if (stdin.stream) {
    for await (const chunk of stdin.stream) {
      if (ws.readyState !== WebSocket.OPEN) break;
      await sendChunk(ws, Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
    }
  }
}

async function sendChunk(ws: WebSocket, chunk: Buffer): Promise<void> {
  for (let offset = 0; offset < chunk.length; offset += MAX_FRAME_BYTES) {
    const part = chunk.subarray(offset, offset + MAX_FRAME_BYTES);
    const frame = Buffer.allocUnsafe(part.length + 1);
    frame[0] = 0;
    part.copy(frame, 1);
    await new Promise<void>((resolve, reject) =>
      ws.send(frame, { binary: true }, (err) => (err ? reject(err) : resolve())),
    );
  }
}
