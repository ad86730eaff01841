import type { Readable, Writable } from 'node:stream';
import { z } from 'zod';
import { AppError } from '../../app-error.js';
import { encodeFrame, FrameDecoder } from './frame-decoder.js';

/**
 * Envelope of every reply of the in-sandbox agent. The agent runs next to untrusted code, so its
 * replies are validated like any outside data.
 */
const replySchema = z.looseObject({
  id: z.number().int().nonnegative(),
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

interface Pending {
  resolve: (reply: AgentReply) => void;
  reject: (err: unknown) => void;
}

/**
 * Request/response multiplexing over the agent's stdin/stdout (framing in `frame-decoder.ts`).
 * Many requests may be in flight; replies are matched by id. Once {@link fail} is called (the
 * sandbox died or was destroyed) every pending and later request rejects with that error.
 */
export class AgentConnection {
  readonly #input: Writable;
  readonly #decoder: FrameDecoder;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #failure: AppError | undefined;
  #onReady: ((pid: number) => void) | undefined;
  /** Resolves with the agent's pid (inside the sandbox) when it has started. */
  readonly ready: Promise<number>;

  /**
   * @param input the agent's stdin.
   * @param output the agent's stdout.
   * @param options.maxBodyBytes largest reply body accepted, in bytes.
   */
  constructor(input: Writable, output: Readable, options: { maxBodyBytes: number }) {
    this.#input = input;
    this.#decoder = new FrameDecoder({ maxBodyBytes: options.maxBodyBytes });
    this.ready = new Promise<number>((resolve, reject) => {
      this.#onReady = resolve;
      this.#rejectReady = reject;
    });
    // A failure before the agent is ready is reported through `ready`; avoid an unhandled rejection
    // when nobody waits on it any more.
    this.ready.catch(() => undefined);
    input.on('error', () => {
      // EPIPE when the sandbox is gone; the exit handler reports it.
    });
    output.on('data', (chunk: Buffer) => this.#onData(chunk));
  }

  #rejectReady: ((err: unknown) => void) | undefined;

  /** The error that ended the connection, if any. */
  get failure(): AppError | undefined {
    return this.#failure;
  }

  /**
   * Send a request; resolves with the reply, rejects with {@link AgentRequestError} when the agent
   * reports a failure, or with the connection's failure ({@link AppError} `SANDBOX_GONE`).
   * `onSent` receives the request id (to address a `kill` at it).
   */
  request(
    header: Record<string, unknown>,
    blobs: readonly Buffer[] = [],
    onSent?: (id: number) => void,
  ): Promise<AgentReply> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    const promise = new Promise<AgentReply>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
    });
    for (const part of encodeFrame({ ...header, id }, blobs)) this.#input.write(part);
    onSent?.(id);
    return promise;
  }

  /** End the connection: reject everything pending and every later request with `error`. */
  fail(error: AppError): void {
    if (this.#failure) return;
    this.#failure = error;
    this.#rejectReady?.(error);
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
  }

  #onData(chunk: Buffer): void {
    if (this.#failure) return;
    let frames;
    try {
      frames = this.#decoder.push(chunk);
    } catch (err) {
      this.fail(
        new AppError('SANDBOX_GONE', `the sandbox agent sent an invalid message: ${String(err)}`, {
          cause: err,
          retryable: true,
        }),
      );
      return;
    }
    for (const frame of frames) {
      const parsed = replySchema.safeParse(frame.header);
      if (!parsed.success) {
        this.fail(
          new AppError('SANDBOX_GONE', `the sandbox agent sent an invalid reply: ${parsed.error.message}`, {
            retryable: true,
          }),
        );
        return;
      }
      const header = parsed.data;
      if (header.event === 'ready' && header.id === 0) {
        const pid = typeof header.pid === 'number' ? header.pid : 0;
        this.#onReady?.(pid);
        continue;
      }
      const pending = this.#pending.get(header.id);
      if (!pending) continue; // a reply to a request we gave up on
      this.#pending.delete(header.id);
      if (header.ok === true) pending.resolve({ header, blobs: frame.blobs });
      else if (header.error) pending.reject(new AgentRequestError(header.error));
      else
        pending.reject(new AgentRequestError({ kind: 'protocol', message: 'reply without result or error' }));
    }
  }
}
