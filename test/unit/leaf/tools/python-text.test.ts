import { describe, expect, it } from 'vitest';
import {
  codePointLength,
  codePointOffset,
  compareCodePoints,
  splitLines,
  translateNewlines,
} from '../../../../src/leaf/tools/python-text.js';
import { runPython } from './run-python.js';

describe('splitLines', () => {
  it("matches Python's str.splitlines() on every line boundary", () => {
    const texts = [
      '',
      'a',
      'a\n',
      'a\n\n',
      '\n',
      'a\r\nb\r\n\r\nc',
      'a\rb\rc\n',
      'a\r\r\nb',
      'x\x0by\x0cz\x1cw\x1dv\x1eu\x1ft',
      'p\x85q\u2028r\u2029s',
      'def a():\n    pass\n\f\ndef b():\n    pass\n',
      'no break at end\u2029',
    ];
    const expected = runPython<string[][]>('result = [t.splitlines() for t in data]', texts);
    expect(texts.map(splitLines)).toEqual(expected);
  });
});

describe('translateNewlines', () => {
  it('turns CRLF and lone CR into LF, as Python universal newlines do', () => {
    expect(translateNewlines('a\r\nb\rc\n\r\r\n')).toBe('a\nb\nc\n\n\n');
    expect(translateNewlines('plain\n')).toBe('plain\n');
  });
});

describe('codePointLength / codePointOffset', () => {
  it('count code points like Python len()', () => {
    const texts = ['', 'abc', 'héllo 😀 ✓\n', '😀😀', 'a\ud800b', '\udfff'];
    const expected = runPython<number[]>('result = [len(t) for t in data]', texts);
    expect(texts.map(codePointLength)).toEqual(expected);
  });

  it('find the UTF-16 index after N code points', () => {
    expect(codePointOffset('a😀b', 2)).toBe(3);
    expect(codePointOffset('a😀b', 10)).toBe(4);
    expect(codePointOffset('abc', 0)).toBe(0);
  });
});

describe('compareCodePoints', () => {
  it("sorts like Python's sorted() on str (code point order)", () => {
    const names = [
      'b.py',
      'B.py',
      'a.py',
      '_c.py',
      'Z.py',
      '10.py',
      '9.py',
      'é.py',
      '\uff01.py',
      '😀.py',
      'a',
      'ab',
      '',
    ];
    const expected = runPython<string[]>('result = sorted(data)', names);
    expect([...names].sort(compareCodePoints)).toEqual(expected);
    // UTF-16 order would put the emoji before U+FF01.
    expect([...names].sort()).not.toEqual(expected);
  });
});
