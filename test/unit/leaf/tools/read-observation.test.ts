import { describe, expect, it } from 'vitest';
import { renderAsciiReadObservation, renderReadObservation } from '../../../../src/leaf/tools/read.js';
import { runPython } from './run-python.js';

/** The reference's Read formatting and `[truncated N chars]` cap, run by the real interpreter. */
const REFERENCE = `
def render(header, text, offset, limit, cap):
    lines = text.splitlines()
    start = offset - 1
    chosen = lines[start:] if limit <= 0 else lines[start:start + limit]
    out = header + "\\n" + "\\n".join(f"{start + i + 1}. {line}" for i, line in enumerate(chosen))
    if cap > 0 and len(out) > cap:
        out = out[:cap] + f"\\n[truncated {len(out) - cap} chars]"
    return out
result = [render(*c) for c in data]
`;

type Case = [header: string, text: string, offset: number, limit: number, cap: number];

/** A small deterministic generator (xorshift), so a failure reproduces. */
function rng(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const PIECES = [
  'a',
  'bc',
  ' ',
  '\n',
  '\n',
  '\r\n',
  '\u2028',
  '\x0b',
  '\x1c',
  '\x85',
  '🐸',
  'é',
  '\ud800',
  '\n\n',
];

describe('renderReadObservation', () => {
  it("matches the reference's numbering and truncation count on random texts, offsets, limits and caps", () => {
    const next = rng(12);
    const cases: Case[] = [];
    for (let k = 0; k < 400; k++) {
      let text = '';
      const n = Math.floor(next() * 60);
      for (let i = 0; i < n; i++) text += PIECES[Math.floor(next() * PIECES.length)] ?? '';
      const header = next() < 0.2 ? 'dír/🐸.txt' : 'src/a.py';
      cases.push([
        header,
        text,
        1 + Math.floor(next() * 5),
        Math.floor(next() * 8) - 2,
        next() < 0.2 ? 0 : Math.floor(next() * 80),
      ]);
    }
    cases.push(['big.txt', 'x'.repeat(50_000) + '\n' + 'y\n'.repeat(30_000), 1, 0, 20_000]);
    cases.push([
      'lines.txt',
      Array.from({ length: 12_000 }, (_, i) => `line ${i} 🐸`).join('\n'),
      3,
      0,
      20_000,
    ]);
    cases.push(['empty.txt', '', 1, 0, 20_000]);
    cases.push(['past.txt', 'a\nb\n', 9, 0, 20_000]);
    const expected = runPython<string[]>(REFERENCE, cases);
    const actual = cases.map((c) => renderReadObservation(...c));
    for (let i = 0; i < cases.length; i++) expect(actual[i], JSON.stringify(cases[i])).toBe(expected[i]);
  });

  it('gives the same observation from the bytes of ASCII files longer than the cap', () => {
    const next = rng(7);
    const ascii = ['a', 'bc', ' ', '\n', '\n', '\n\n', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', 'xyz'];
    const cases: Case[] = [];
    for (let k = 0; k < 1500; k++) {
      let text = '';
      const n = 1 + Math.floor(next() * 80);
      for (let i = 0; i < n; i++) text += ascii[Math.floor(next() * ascii.length)] ?? '';
      cases.push(['src/a.py', text, 1, 0, 1 + Math.floor(next() * 60)]);
    }
    cases.push(['big.py', 'value = compute(alpha, beta)  # comment\n'.repeat(26_000), 1, 0, 20_000]);
    cases.push(['big.py', 'line\n'.repeat(30_000) + 'last', 1, 0, 20_000]);
    const expected = runPython<string[]>(REFERENCE, cases);
    let fast = 0;
    for (let i = 0; i < cases.length; i++) {
      const [header, text, , , cap] = cases[i] ?? ['', '', 1, 0, 0];
      const actual = renderAsciiReadObservation(header, Buffer.from(text), cap);
      if (actual === undefined) continue;
      fast++;
      expect(actual, JSON.stringify(cases[i])).toBe(expected[i]);
    }
    // Most of these texts are longer than their cap, so the byte path must have answered them.
    expect(fast).toBeGreaterThan(cases.length / 2);
  });
});
