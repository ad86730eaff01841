/**
 * Python value semantics the reference Leaf tool runner applies to tool arguments (`str(x)`,
 * `repr(x)`, truthiness, `int(x)`, `float(x)`, `f"{x:.1f}"`), re-implemented for the JSON values a
 * tool call carries. Sources: the Python 3.11 language reference and `frognano/harness/leaf/tool_runner.py`
 * of microsoft/FrogNano (the reference), whose observations FrogNano-4B was trained on.
 *
 * Known limit: `JSON.parse` does not keep the int/float distinction, so a JSON `1.0` is treated as the
 * Python int `1` (`str()` gives `1`, Python would give `1.0`).
 *
 * Changes together with the other `python-*.ts` files and the parity suite
 * (`test/fixtures/leaf-parity/`, `test/integration/leaf/parity.test.ts`): the observations must stay
 * byte-identical to the reference.
 */
import { PythonError } from './python-error.js';
import { pyRepr } from './python-repr.js';

// Re-exported so the tools keep one import for the Python value semantics.
export { pyRepr };

/** Characters for which Python's `str.isspace()` is true (what `str.strip()` and `int()` strip). */
const PY_WHITESPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002,
  0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

/** Python `str.strip()` with no argument (Unicode whitespace as Python defines it). */
export function pyStrip(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && PY_WHITESPACE.has(s.charCodeAt(start))) start++;
  while (end > start && PY_WHITESPACE.has(s.charCodeAt(end - 1))) end--;
  return s.slice(start, end);
}

/** Python `repr()` of a float (shortest round-trip digits; exponent form below 1e-4 and from 1e16). */
function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa = '0', expText = '0'] = x.toExponential().split('e');
  const exp = Number(expText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
    const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
    const frac = digits.slice(exp + 1);
    return `${sign}${intPart}.${frac === '' ? '0' : frac}`;
  }
  const frac = digits.slice(1);
  const expOut = `${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return `${sign}${digits[0] ?? '0'}${frac === '' ? '' : `.${frac}`}e${expOut}`;
}

/**
 * Python `str()` of a JSON number: integral values print as ints (below 1e21, where JSON writes no
 * exponent), others as Python floats.
 */
function pyNumberStr(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) {
    return Number.isSafeInteger(n) ? String(n) : BigInt(n).toString();
  }
  return pyFloatRepr(n);
}

/** Python `repr()` of a JSON value (strings quoted, containers recursive). */
export function pyReprValue(v: unknown): string {
  return typeof v === 'string' ? pyRepr(v) : pyStr(v);
}

/**
 * Python `str()` of a JSON value: strings unchanged, `null` → `None`, booleans → `True`/`False`,
 * lists and dicts in Python's repr syntax (`['a', 1]`, `{'k': None}`).
 */
export function pyStr(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return pyNumberStr(v);
  if (Array.isArray(v)) return `[${v.map(pyReprValue).join(', ')}]`;
  if (typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    return `{${entries.map(([k, val]) => `${pyRepr(k)}: ${pyReprValue(val)}`).join(', ')}}`;
  }
  return String(v);
}

/** Python truthiness of a JSON value (`None`, `False`, `0`, `''`, `[]`, `{}` are false). */
export function pyTruthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** Python type name of a JSON value, for TypeError messages. */
function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'object') return 'dict';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  return 'str';
}

const INT_LITERAL = /^[+-]?\d(?:_?\d)*$/;

/**
 * Python `int(v)` for a JSON value: numbers truncate toward zero, booleans are 1/0, strings are parsed
 * in base 10 after stripping whitespace (underscores between digits allowed; ASCII digits only).
 * Throws {@link PythonError} `ValueError`/`TypeError`/`OverflowError` with Python's messages.
 */
export function pyInt(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') {
    if (Number.isNaN(v)) throw new PythonError('ValueError', 'cannot convert float NaN to integer');
    if (!Number.isFinite(v))
      throw new PythonError('OverflowError', 'cannot convert float infinity to integer');
    return Math.trunc(v);
  }
  if (typeof v === 'string') {
    const text = pyStrip(v);
    if (!INT_LITERAL.test(text)) {
      throw new PythonError('ValueError', `invalid literal for int() with base 10: ${pyRepr(v)}`);
    }
    return Number(text.replaceAll('_', ''));
  }
  throw new PythonError(
    'TypeError',
    `int() argument must be a string, a bytes-like object or a real number, not '${pyTypeName(v)}'`,
  );
}

const DIGITS = String.raw`\d(?:_?\d)*`;
const FLOAT_LITERAL = new RegExp(
  String.raw`^[+-]?(?:${DIGITS}(?:\.(?:${DIGITS})?)?|\.${DIGITS})(?:[eE][+-]?${DIGITS})?$`,
);
const FLOAT_SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

/**
 * Python `float(v)` for a JSON value: numbers as is, booleans 1/0, strings in Python's float syntax
 * (`' 1.5 '`, `'1_000'`, `'inf'`, `'nan'`). Throws {@link PythonError} `ValueError`/`TypeError` with
 * Python's messages.
 */
export function pyFloat(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const text = pyStrip(v);
    if (FLOAT_LITERAL.test(text)) return Number(text.replaceAll('_', ''));
    const special = FLOAT_SPECIAL.exec(text);
    if (special) {
      if (special[2]?.toLowerCase() === 'nan') return Number.NaN;
      return special[1] === '-' ? -Infinity : Infinity;
    }
    throw new PythonError('ValueError', `could not convert string to float: ${pyRepr(v)}`);
  }
  throw new PythonError(
    'TypeError',
    `float() argument must be a string or a real number, not '${pyTypeName(v)}'`,
  );
}

/**
 * Python `f"{x:.1f}"`: correctly rounded to one decimal, ties (odd multiples of 0.25, the only
 * binary values that tie) to even, where JavaScript's `toFixed` rounds them up.
 */
export function formatFixed1(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const negative = x < 0 || Object.is(x, -0);
  const a = Math.abs(x);
  let text: string;
  if (a >= 1e21) {
    text = `${BigInt(a).toString()}.0`;
  } else if (Number.isInteger(a * 4) && !Number.isInteger(a * 2)) {
    // a * 10 is exactly k + 0.5: round half to even.
    const floor = Math.floor(a * 10);
    const tenths = floor % 2 === 0 ? floor : floor + 1;
    text = `${Math.floor(tenths / 10)}.${tenths % 10}`;
  } else {
    text = a.toFixed(1);
  }
  return negative ? `-${text}` : text;
}
