/**
 * Framing of the pipe between the host and the in-sandbox agent (`sandbox-agent.cjs`, which holds
 * the other half of this format). One frame per message:
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

/** Header bytes accepted from the agent; real headers are a few hundred bytes (file lists aside). */
const DEFAULT_MAX_HEADER_BYTES = 256 * 1024 * 1024;

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

/**
 * Incremental decoder: feed it chunks as they arrive (in any split), get whole frames back.
 * Throws a `RangeError` when a frame announces more than the configured sizes (a confused or
 * hostile agent must not make the worker allocate gigabytes) and `SyntaxError` for a header that
 * is not JSON; the connection is then unusable.
 */
export class FrameDecoder {
  readonly #maxHeaderBytes: number;
  readonly #maxBodyBytes: number;
  #chunks: Buffer[] = [];
  #buffered = 0;

  /**
   * @param options.maxBodyBytes largest accepted body in bytes.
   * @param options.maxHeaderBytes largest accepted JSON header in bytes (default 256 MiB: a file
   *   list of 100 000 long paths is big).
   */
  constructor(options: { maxBodyBytes: number; maxHeaderBytes?: number }) {
    this.#maxBodyBytes = options.maxBodyBytes;
    this.#maxHeaderBytes = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  }

  /** Add a chunk; returns the frames completed by it (possibly none). */
  push(chunk: Buffer): Frame[] {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    const frames: Frame[] = [];
    for (;;) {
      if (this.#buffered < 8) return frames;
      let first = this.#chunks[0] as Buffer;
      if (first.length < 8) {
        first = Buffer.concat(this.#chunks);
        this.#chunks = [first];
      }
      const headerLength = first.readUInt32BE(0);
      const bodyLength = first.readUInt32BE(4);
      if (headerLength > this.#maxHeaderBytes) {
        throw new RangeError(`agent frame header of ${headerLength} bytes exceeds ${this.#maxHeaderBytes}`);
      }
      if (bodyLength > this.#maxBodyBytes) {
        throw new RangeError(`agent frame body of ${bodyLength} bytes exceeds ${this.#maxBodyBytes}`);
      }
      const total = 8 + headerLength + bodyLength;
      if (this.#buffered < total) return frames;
      const all = this.#chunks.length === 1 ? first : Buffer.concat(this.#chunks, this.#buffered);
      const rest = all.subarray(total);
      this.#chunks = rest.length > 0 ? [rest] : [];
      this.#buffered = rest.length;
      const header: unknown = JSON.parse(all.toString('utf8', 8, 8 + headerLength));
      const body = all.subarray(8 + headerLength, total);
      frames.push({ header, blobs: splitBlobs(header, body) });
    }
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
      throw new RangeError('agent frame blob lengths do not match its body');
    }
    blobs.push(body.subarray(offset, offset + n));
    offset += n;
  }
  return blobs;
}
