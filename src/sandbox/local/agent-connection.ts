// Host half of the channel to the in-sandbox agent: changes together with `sandbox-agent.cjs` (the
// agent's half) and `frame-decoder.ts` (the frame format).
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { z } from 'zod';
import { AppError } from '../../app-error.js';
import { encodeFrame, FrameDecoder, FrameError } from './frame-decoder.js';

/**
 * Envelope of every reply of the in-sandbox agent. The agent runs next to untrusted code, so its
 * replies are validated like any outside data.
 */
const replySchema = z.looseObject({
  id: z.number().int().nonnegative(),
  nonce: z.string().optional(),
  ok: z.boolean().optional(),
  event: z.string().optional(),
  error: z
    .object({
      kind: z.enum(['file', 'exec', 'protocol']),
      errno: z.string().optional(),
      path: z.string().optional(),
      message: z.string(),
    })
    .optional(),
});

/** A reply of the agent: its header (envelope validated, result fields not yet) and blobs. */
export interface AgentReply {
  header: z.infer<typeof replySchema>;
  blobs: Buffer[];
}

/** Failure reported by the agent for one request (`kind` says which). */
export class AgentRequestError extends Error {
  readonly kind: 'file' | 'exec' | 'protocol';
  readonly errno: string | undefined;
  readonly path: string | undefined;

  constructor(error: NonNullable<AgentReply['header']['error']>) {
    super(error.message);
    this.name = 'AgentRequestError';
    this.kind = error.kind;
    this.errno = error.errno;
    this.path = error.path;
  }
}

/**
 * What one request may get back, and by when. A reply above these caps, or none by the deadline,
 * is a protocol violation: the connection fails and the sandbox is destroyed.
 */
export interface ReplyLimits {
  /** Largest reply header (JSON) in bytes. */
  maxHeaderBytes: number;
  /** Largest reply body (all blobs together) in bytes. */
  maxBodyBytes: number;
  /** Host-side deadline of the whole call in ms (its own timeout plus a grace period). */
  deadlineMs: number;
}

/** Header cap of the agent's `ready` event and of frames that arrive while nothing is asked (bytes). */
const IDLE_HEADER_BYTES = 4096;

/** Error code of a broken protocol (classified in `pipeline/outcome.ts` as `sandbox_failed`). */
export const PROTOCOL_VIOLATION = 'SANDBOX_PROTOCOL_VIOLATION';

/** The {@link AppError} of a protocol violation: "the sandbox broke its protocol: …". Not retryable. */
export function protocolViolation(detail: string): AppError {
  return new AppError(PROTOCOL_VIOLATION, `the sandbox broke its protocol: ${detail}`, { retryable: false });
}

interface Pending {
  op: string;
  nonce: string;
  limits: ReplyLimits;
  timer: NodeJS.Timeout;
  resolve: (reply: AgentReply) => void;
  reject: (err: unknown) => void;
}

/**
 * Request/response multiplexing over the agent's channel (one socket; framing in
 * `frame-decoder.ts`). Many requests may be in flight; replies are matched by id and must echo the
 * request's random nonce, which only the agent sees (commands cannot read the channel), so a
 * forged reply cannot answer a real request.
 *
 * Anything else is a protocol violation ({@link PROTOCOL_VIOLATION}): a frame above the caps the
 * request asked for, an id nobody waits for (unknown, or already answered), a wrong nonce, a
 * second `ready`, bytes that are not a frame, or no reply within the request's deadline. Then
 * every pending and later request rejects with that error and `onViolation` is called once (the
 * sandbox destroys itself). {@link fail} ends the connection for other reasons (`SANDBOX_GONE`).
 */
export class AgentConnection {
  readonly #channel: Duplex;
  readonly #decoder: FrameDecoder;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #failure: AppError | undefined;
  #readySeen = false;
  #onReady: ((pid: number) => void) | undefined;
  #rejectReady: ((err: unknown) => void) | undefined;
  /** Called once, with the error, when the agent breaks the protocol. */
  onViolation: ((error: AppError) => void) | undefined;
  /** Resolves with the agent's pid (inside the sandbox) when it has started. */
  readonly ready: Promise<number>;

  /** @param channel the host's end of the agent's socket (fd 3 inside the sandbox). */
  constructor(channel: Duplex) {
    this.#channel = channel;
    this.#decoder = new FrameDecoder({
      maxHeaderBytes: () => this.#maxOver('maxHeaderBytes', IDLE_HEADER_BYTES),
      maxBodyBytes: () => this.#maxOver('maxBodyBytes', 0),
      acceptHeader: (header, bodyLength) => this.#acceptHeader(header, bodyLength),
    });
    this.ready = new Promise<number>((resolve, reject) => {
      this.#onReady = resolve;
      this.#rejectReady = reject;
    });
    // A failure before the agent is ready is reported through `ready`; avoid an unhandled rejection
    // when nobody waits on it any more.
    this.ready.catch(() => undefined);
    channel.on('error', () => {
      // EPIPE/ECONNRESET when the sandbox is gone; the exit handler reports it.
    });
    channel.on('data', (chunk: Buffer) => this.#onData(chunk));
  }

  /** The error that ended the connection, if any. */
  get failure(): AppError | undefined {
    return this.#failure;
  }

  /**
   * Send a request; resolves with the reply, rejects with {@link AgentRequestError} when the agent
   * reports a failure, or with the connection's failure ({@link AppError} `SANDBOX_GONE`, or
   * {@link PROTOCOL_VIOLATION}, also when `limits.deadlineMs` passes without a reply).
   * `onSent` receives the request id (to address a `kill` at it).
   */
  request(
    header: Record<string, unknown> & { op: string },
    blobs: readonly Buffer[],
    limits: ReplyLimits,
    onSent?: (id: number) => void,
  ): Promise<AgentReply> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    const nonce = randomBytes(12).toString('base64url');
    const promise = new Promise<AgentReply>((resolve, reject) => {
      const timer = setTimeout(
        () => this.violate(`no reply to ${header.op} within ${limits.deadlineMs} ms`),
        limits.deadlineMs,
      );
      this.#pending.set(id, { op: header.op, nonce, limits, timer, resolve, reject });
    });
    for (const part of encodeFrame({ ...header, id, nonce }, blobs)) this.#channel.write(part);
    onSent?.(id);
    return promise;
  }

  /** End the connection: reject everything pending and every later request with `error`. */
  fail(error: AppError): void {
    if (this.#failure) return;
    this.#failure = error;
    this.#rejectReady?.(error);
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(error);
    }
    this.#pending.clear();
  }

  /** Fail with a protocol violation (`detail` says what) and tell {@link onViolation}. */
  violate(detail: string): void {
    if (this.#failure) return;
    const error = protocolViolation(detail);
    this.fail(error);
    this.onViolation?.(error);
  }

  /** The largest `key` cap of the pending requests (a frame may answer any of them), or `floor`. */
  #maxOver(key: 'maxHeaderBytes' | 'maxBodyBytes', floor: number): number {
    let max = floor;
    for (const p of this.#pending.values()) max = Math.max(max, p.limits[key]);
    return max;
  }

  /** Throws a FrameError unless the header answers a pending request within its caps. */
  #acceptHeader(header: unknown, bodyLength: number): void {
    const h = header as { id?: unknown; nonce?: unknown; event?: unknown } | null;
    if (typeof h !== 'object' || h === null || typeof h.id !== 'number') {
      throw new FrameError('a frame header without a numeric id');
    }
    if (h.id === 0 && h.event === 'ready') {
      if (this.#readySeen) throw new FrameError('a second ready event');
      if (bodyLength !== 0) throw new FrameError('a ready event with a body');
      return;
    }
    const pending = this.#pending.get(h.id);
    if (!pending) throw new FrameError(`a reply with id ${h.id}, which no request waits for`);
    if (h.nonce !== pending.nonce) throw new FrameError(`a reply to ${pending.op} with a wrong nonce`);
    if (bodyLength > pending.limits.maxBodyBytes) {
      throw new FrameError(
        `a reply to ${pending.op} of ${bodyLength} bytes, above the ${pending.limits.maxBodyBytes} it may have`,
      );
    }
  }

  #onData(chunk: Buffer): void {
    if (this.#failure) return;
    let frames;
    try {
      frames = this.#decoder.push(chunk);
    } catch (err) {
      this.violate(err instanceof FrameError ? err.message : `an unreadable frame (${String(err)})`);
      return;
    }
    for (const frame of frames) {
      const parsed = replySchema.safeParse(frame.header);
      if (!parsed.success) {
        this.violate(`an invalid reply (${parsed.error.issues[0]?.message ?? 'schema'})`);
        return;
      }
      const header = parsed.data;
      if (header.event === 'ready' && header.id === 0) {
        this.#readySeen = true;
        this.#onReady?.(typeof header.pid === 'number' ? header.pid : 0);
        continue;
      }
      const pending = this.#pending.get(header.id);
      if (!pending) continue; // unreachable: acceptHeader checked it
      this.#pending.delete(header.id);
      clearTimeout(pending.timer);
      if (header.ok === true) pending.resolve({ header, blobs: frame.blobs });
      else if (header.error) pending.reject(new AgentRequestError(header.error));
      else
        pending.reject(new AgentRequestError({ kind: 'protocol', message: 'reply without result or error' }));
    }
  }
}
