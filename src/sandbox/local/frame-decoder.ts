/**
 * Framing of the channel between the host and the in-sandbox agent (`sandbox-agent.cjs`, which
 * holds the other half of this format; the two change together, with `agent-connection.ts`). One
 * frame per message:
 *
 * ```
 * u32 BE header length | u32 BE body length | header (UTF-8 JSON) | body (raw bytes)
 * ```
 *
 * The header's `blobs` array gives the byte lengths of the buffers concatenated in the body, so
 * file contents and command output travel as raw bytes (no base64, no UTF-8 assumption).
 */

/** One decoded frame: the parsed JSON header (unvalidated) and its binary attachments. */
export interface Frame {
  header: unknown;
  blobs: Buffer[];
}

/**
 * A frame the decoder refuses: too long, not JSON, blob lengths that do not add up, or refused by
 * the connection's {@link FrameDecoderHooks.acceptHeader}. The connection is unusable afterwards.
 */
export class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FrameError';
  }
}

/**
 * Encode one frame. `header` must be JSON-serialisable; a `blobs` field is added listing the
 * lengths of `blobs`. Returns the buffers to write in order (the blobs are not copied).
 */
export function encodeFrame(header: Record<string, unknown>, blobs: readonly Buffer[] = []): Buffer[] {
  const json = Buffer.from(JSON.stringify({ ...header, blobs: blobs.map((b) => b.length) }), 'utf8');
  let bodyLength = 0;
  for (const b of blobs) bodyLength += b.length;
  if (bodyLength > 0xffff_ffff) throw new RangeError(`frame body too large: ${bodyLength} bytes`);
  const prefix = Buffer.allocUnsafe(8);
  prefix.writeUInt32BE(json.length, 0);
  prefix.writeUInt32BE(bodyLength, 4);
  return [Buffer.concat([prefix, json]), ...blobs.filter((b) => b.length > 0)];
}

/** What the decoder asks its owner while a frame arrives (the caps depend on what was asked). */
export interface FrameDecoderHooks {
  /** Largest header accepted for the next frame, in bytes. */
  maxHeaderBytes(): number;
  /** Largest body any frame may announce now, in bytes (checked before its header has arrived). */
  maxBodyBytes(): number;
  /**
   * Called with a frame's parsed header and announced body length before any of its body is kept.
   * Throw a {@link FrameError} to refuse the frame (unknown id, body above what the call asked for).
   */
  acceptHeader(header: unknown, bodyLength: number): void;
}

/**
 * Incremental decoder: feed it chunks as they arrive (in any split), get whole frames back. What
 * it keeps is bounded by the frame being read: the header cap until the header is parsed and
 * accepted, then that frame's announced (and accepted) body. Throws {@link FrameError}; the
 * connection is then unusable.
 */
export class FrameDecoder {
  readonly #hooks: FrameDecoderHooks;
  #chunks: Buffer[] = [];
  #buffered = 0;
  /** The current frame once its header was accepted. */
  #current: { header: unknown; headerLength: number; bodyLength: number } | undefined;

  constructor(hooks: FrameDecoderHooks) {
    this.#hooks = hooks;
  }

  /** Add a chunk; returns the frames completed by it (possibly none). */
  push(chunk: Buffer): Frame[] {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    const frames: Frame[] = [];
    for (;;) {
      if (this.#buffered < 8) return frames;
      if (this.#current === undefined) {
        const prefix = this.#contiguous(8);
        const headerLength = prefix.readUInt32BE(0);
        const bodyLength = prefix.readUInt32BE(4);
        const maxHeader = this.#hooks.maxHeaderBytes();
        if (headerLength > maxHeader) {
          throw new FrameError(`a frame header of ${headerLength} bytes exceeds ${maxHeader}`);
        }
        const maxBody = this.#hooks.maxBodyBytes();
        if (bodyLength > maxBody) {
          throw new FrameError(`a frame body of ${bodyLength} bytes exceeds ${maxBody}`);
        }
        if (this.#buffered < 8 + headerLength) return frames;
        const all = this.#contiguous(8 + headerLength);
        let header: unknown;
        try {
          header = JSON.parse(all.toString('utf8', 8, 8 + headerLength));
        } catch {
          throw new FrameError('a frame header is not JSON');
        }
        this.#hooks.acceptHeader(header, bodyLength);
        this.#current = { header, headerLength, bodyLength };
      }
      const { header, headerLength, bodyLength } = this.#current;
      const total = 8 + headerLength + bodyLength;
      if (this.#buffered < total) return frames;
      const all = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks);
      const rest = all.subarray(total);
      this.#chunks = rest.length > 0 ? [rest] : [];
      this.#buffered = rest.length;
      this.#current = undefined;
      frames.push({ header, blobs: splitBlobs(header, all.subarray(8 + headerLength, total)) });
    }
  }

  /** The buffered bytes as one buffer holding at least `n` bytes (joins chunks only when needed). */
  #contiguous(n: number): Buffer {
    let first = this.#chunks[0] as Buffer;
    if (first.length < n) {
      first = Buffer.concat(this.#chunks, this.#buffered);
      this.#chunks = [first];
    }
    return first;
  }
}

function splitBlobs(header: unknown, body: Buffer): Buffer[] {
  const lengths =
    typeof header === 'object' && header !== null && Array.isArray((header as { blobs?: unknown }).blobs)
      ? ((header as { blobs: unknown[] }).blobs as unknown[])
      : [];
  const blobs: Buffer[] = [];
  let offset = 0;
  for (const n of lengths) {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || offset + n > body.length) {
      throw new FrameError('the blob lengths of a frame do not match its body');
    }
    blobs.push(body.subarray(offset, offset + n));
    offset += n;
  }
  if (offset !== body.length) throw new FrameError('the blob lengths of a frame do not match its body');
  return blobs;
}
