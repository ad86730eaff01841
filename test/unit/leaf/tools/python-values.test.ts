import { describe, expect, it } from 'vitest';
import { PythonError } from '../../../../src/leaf/tools/python-error.js';
import {
  formatFixed1,
  pyFloat,
  pyInt,
  pyRepr,
  pyStr,
  pyStrip,
  pyTruthy,
} from '../../../../src/leaf/tools/python-values.js';
import { runPython } from './run-python.js';

const STRINGS = [
  '',
  'plain',
  "it's",
  'say "hi"',
  `both ' and "`,
  'back\\slash',
  'tab\tnew\nline\rcr',
  '\x00\x1b\x7f',
  '\x85\xa0\xad é ü',
  '\u200b\u2028\u2029\ufeff',
  '日本語 😀 ✓ —',
  '\ud800 lone',
  'lone \udfff',
  '\ue000 private',
  '\u0378 unassigned',
  '/work/repo/nope/missing.py',
];

describe('pyRepr', () => {
  it('matches Python repr() for quotes, escapes and (non-)printable characters', () => {
    const expected = runPython<string[]>('result = [repr(s) for s in data]', STRINGS);
    expect(STRINGS.map(pyRepr)).toEqual(expected);
  });
});

describe('pyStr', () => {
  it('matches Python str() of JSON values', () => {
    const values = [
      'text',
      null,
      true,
      false,
      0,
      -3,
      1.5,
      0.00001,
      0.0001,
      123456.789,
      1.5e300,
      -2.5e-7,
      [1, 'a', null, [true, "q'"]],
      { k: "v'", n: 1.25, e: {}, l: [] },
    ];
    const expected = runPython<string[]>('result = [str(v) for v in data]', values);
    expect(values.map(pyStr)).toEqual(expected);
  });
});

describe('pyTruthy', () => {
  it('treats None, False, 0, empty string/list/dict as false', () => {
    const values = [null, false, 0, '', [], {}, true, 1, -1, 'x', ' ', [0], { a: null }, 0.5];
    const expected = runPython<boolean[]>('result = [bool(v) for v in data]', values);
    expect(values.map(pyTruthy)).toEqual(expected);
  });
});

describe('pyStrip', () => {
  it('strips what Python str.strip() strips', () => {
    const values = [
      ' a ',
      '\t\n\x0b\x0c\r a',
      'a\x1c\x1d\x1e\x1f',
      '\x85\xa0a\u3000',
      '\ufeffa\ufeff',
      '\u200ba',
    ];
    const expected = runPython<string[]>('result = [v.strip() for v in data]', values);
    expect(values.map(pyStrip)).toEqual(expected);
  });
});

/** Run a conversion, returning the value or the Python-style error line. */
function attempt(fn: () => number): string {
  try {
    const v = fn();
    if (Number.isNaN(v)) return 'nan';
    if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
    return String(v);
  } catch (err) {
    if (err instanceof PythonError) return err.observation;
    throw err;
  }
}

const PY_ATTEMPT = `
import math
def attempt(f, v):
    try:
        r = f(v)
        if isinstance(r, float):
            if math.isnan(r): return 'nan'
            if math.isinf(r): return 'inf' if r > 0 else '-inf'
            return str(int(r)) if r == int(r) else repr(r)
        return str(r)
    except Exception as e:
        return f'{type(e).__name__}: {e}'
`;

describe('pyInt', () => {
  it('matches Python int() values and error messages', () => {
    const values = [
      ' 12 ',
      '+3',
      '-4',
      '1_000',
      '1__0',
      '_1',
      '2.5',
      '',
      ' ',
      'abc',
      '0x10',
      true,
      false,
      2.7,
      -2.7,
      [1],
      { a: 1 },
    ];
    const expected = runPython<string[]>(`${PY_ATTEMPT}\nresult = [attempt(int, v) for v in data]`, values);
    expect(values.map((v) => attempt(() => pyInt(v)))).toEqual(expected);
  });

  it('reports infinity like Python', () => {
    expect(attempt(() => pyInt(Infinity))).toBe('OverflowError: cannot convert float infinity to integer');
  });
});

describe('pyFloat', () => {
  it('matches Python float() values and error messages', () => {
    const values = [
      '1.5',
      ' 2 ',
      '1e3',
      '1_0.5',
      'inf',
      '-Infinity',
      'NaN',
      'abc',
      '.5',
      '5.',
      '.',
      '1e',
      '1_',
      '',
      [1],
      {},
      true,
      1500,
    ];
    const expected = runPython<string[]>(`${PY_ATTEMPT}\nresult = [attempt(float, v) for v in data]`, values);
    expect(values.map((v) => attempt(() => pyFloat(v)))).toEqual(expected);
  });
});

describe('formatFixed1', () => {
  it("matches Python's '{:.1f}' including ties to even", () => {
    const values = [
      0.1, 0.7, 1, 1.5, 0.25, 0.75, 1.25, 2.25, 0.05, 0.15, 2.675, 999.95, 1.05, 120, 1e21, 1e22, 123.45,
    ];
    const expected = runPython<string[]>("result = [format(v, '.1f') for v in data]", values);
    expect(values.map(formatFixed1)).toEqual(expected);
  });
});
