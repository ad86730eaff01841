/**
 * Observation formatting shared by the Leaf tools: the reference harness's `[truncated N chars]`
 * cap and UTF-8 decoding of file contents and command output.
 * Source of the formats: `frognano/harness/leaf/tool_runner.py` of microsoft/FrogNano.
 */
import { codePointLength, codePointOffset } from './tools/python-text.js';

/**
 * Cap an observation at `limit` characters (code points, as Python's `len`). A longer one keeps its
 * first `limit` characters followed by `\n[truncated N chars]`, where N is the number of characters
 * removed, counted on the whole observation. `limit <= 0` disables the cap.
 */
export function truncateObservation(value: string, limit: number): string {
  if (limit <= 0 || value.length <= limit) return value;
  const length = codePointLength(value);
  if (length <= limit) return value;
  return `${value.slice(0, codePointOffset(value, limit))}\n[truncated ${length - limit} chars]`;
}

/**
 * Decode UTF-8 bytes as Python's `bytes.decode('utf-8', errors='replace')` does: each maximal invalid
 * subsequence becomes U+FFFD (WHATWG and Python follow the same Unicode recommendation), a byte-order
 * mark is kept as U+FEFF. Never throws.
 */
export function decodeUtf8(bytes: Uint8Array): string {
  return new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(bytes);
}
