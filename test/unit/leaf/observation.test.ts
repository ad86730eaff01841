import { describe, expect, it } from 'vitest';
import { decodeUtf8, truncateObservation } from '../../../src/leaf/observation.js';
import { runPython } from './tools/run-python.js';

describe('truncateObservation', () => {
  it('keeps an observation at or under the limit unchanged', () => {
    expect(truncateObservation('abcde', 5)).toBe('abcde');
    expect(truncateObservation('😀😀', 2)).toBe('😀😀');
  });

  it('keeps the first N characters and counts the removed ones on the whole observation', () => {
    expect(truncateObservation('abcdefghij', 4)).toBe('abcd\n[truncated 6 chars]');
  });

  it('counts code points, not UTF-16 units, as Python len() does', () => {
    expect(truncateObservation('😀😀😀😀', 3)).toBe('😀😀😀\n[truncated 1 chars]');
  });

  it('does not truncate when the limit is zero or negative', () => {
    expect(truncateObservation('abc', 0)).toBe('abc');
    expect(truncateObservation('abc', -1)).toBe('abc');
  });
});

describe('decodeUtf8', () => {
  it("matches Python's bytes.decode('utf-8', errors='replace')", () => {
    const samples = [
      [0x6f, 0x6b, 0x0a, 0xff, 0xfe, 0x20, 0x62, 0x61, 0x64, 0x0a, 0xe2, 0x82, 0x20, 0x63],
      [0xed, 0xa0, 0x80],
      [0xf0, 0x9f, 0x98],
      [0xf0, 0x9f, 0x98, 0x80, 0xc0, 0xaf, 0xe0, 0x80, 0xbf],
      [0xef, 0xbb, 0xbf, 0x61],
      [0xf4, 0x90, 0x80, 0x80, 0x41],
      [0x80, 0x80, 0xc2],
    ];
    const expected = runPython<string[]>(
      "result = [bytes(b).decode('utf-8', errors='replace') for b in data]",
      samples,
    );
    expect(samples.map((b) => decodeUtf8(Uint8Array.from(b)))).toEqual(expected);
  });
});
