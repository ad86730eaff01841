import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../../src/app-error.js';
import { bashTimeoutSeconds } from '../../../../src/leaf/tools/bash.js';
import { countOccurrences, isUniformlyCrlf, truthyFlag } from '../../../../src/leaf/tools/edit.js';
import { parseToolArguments, readLeafToolSettings } from '../../../../src/leaf/tools/index.js';
import { PythonError, pythonOsError } from '../../../../src/leaf/tools/python-error.js';
import { utf8EncodeError } from '../../../../src/leaf/tools/write.js';
import { LEAF_PROTOCOL } from '../../../../src/protocol/protocol.js';
import { runPython } from './run-python.js';

describe('parseToolArguments', () => {
  it('returns a JSON object and turns anything else into {}', () => {
    expect(parseToolArguments('{"file_path": "a.txt", "limit": 2}')).toEqual({
      file_path: 'a.txt',
      limit: 2,
    });
    for (const raw of ['', '{"command": "echo hi"', '["a.txt"]', 'null', '"x"', '3', 'true', '{bad}']) {
      expect(parseToolArguments(raw)).toEqual({});
    }
  });
});

describe('readLeafToolSettings', () => {
  it('defaults to the protocol limits', () => {
    const s = readLeafToolSettings({});
    expect(s.readOutputChars).toBe(LEAF_PROTOCOL.limits.read_output_chars);
    expect(s.bashOutputChars).toBe(LEAF_PROTOCOL.limits.bash_output_chars);
    expect(s.globLimit).toBe(LEAF_PROTOCOL.limits.glob_limit);
    expect(s.bashDefaultTimeoutSec).toBe(LEAF_PROTOCOL.limits.bash_default_timeout_sec);
  });

  it('reads the LEAF_* variables with Python int() syntax; empty means default', () => {
    const s = readLeafToolSettings({
      LEAF_TOOL_OUTPUT_CHARS: ' 500 ',
      LEAF_BASH_OUTPUT_CHARS: '1_000',
      LEAF_GLOB_LIMIT: '-3',
      LEAF_BASH_TIMEOUT_SEC: '',
    });
    expect([s.readOutputChars, s.bashOutputChars, s.globLimit, s.bashDefaultTimeoutSec]).toEqual([
      500, 1000, -3, 120,
    ]);
  });

  it('rejects a value that is not an integer with CONFIG_INVALID naming the variable', () => {
    let caught: unknown;
    try {
      readLeafToolSettings({ LEAF_GLOB_LIMIT: '1.5' });
    } catch (err) {
      caught = err;
    }
    expect(isAppError(caught, 'CONFIG_INVALID')).toBe(true);
    expect((caught as Error).message).toContain('LEAF_GLOB_LIMIT');
  });
});

describe('bashTimeoutSeconds', () => {
  it('reads seconds, treats values above 1000 as ms, prefers timeout_ms, floors at 0.1 s', () => {
    expect(bashTimeoutSeconds({}, 120)).toBe(120);
    expect(bashTimeoutSeconds({ timeout: null }, 120)).toBe(120);
    expect(bashTimeoutSeconds({ timeout: 1 }, 120)).toBe(1);
    expect(bashTimeoutSeconds({ timeout: 1000 }, 120)).toBe(1000);
    expect(bashTimeoutSeconds({ timeout: 1500 }, 120)).toBe(1.5);
    expect(bashTimeoutSeconds({ timeout: '30' }, 120)).toBe(30);
    expect(bashTimeoutSeconds({ timeout: 0 }, 120)).toBe(0.1);
    expect(bashTimeoutSeconds({ timeout: -5 }, 120)).toBe(0.1);
    expect(bashTimeoutSeconds({ timeout: 'nan' }, 120)).toBe(0.1);
    expect(bashTimeoutSeconds({ timeout_ms: 700, timeout: 5 }, 120)).toBe(0.7);
    expect(bashTimeoutSeconds({ timeout_ms: 20 }, 120)).toBe(0.1);
    expect(bashTimeoutSeconds({ timeout_ms: null, timeout: 2 }, 120)).toBe(2);
    expect(() => bashTimeoutSeconds({ timeout: 'soon' }, 120)).toThrow(PythonError);
  });
});

describe('truthyFlag', () => {
  it("reads replace_all like the reference's _truthy", () => {
    const values = [
      true,
      false,
      'yes',
      'YES ',
      'true',
      'on',
      '1',
      1,
      'false',
      'no',
      '',
      0,
      2,
      null,
      [],
      ['x'],
      'y',
    ];
    const expected = runPython<boolean[]>(
      `def truthy(v):
    if isinstance(v, bool):
        return v
    return str(v or '').strip().lower() in {'1', 'true', 'yes', 'on'}
result = [truthy(v) for v in data]`,
      values,
    );
    expect(values.map(truthyFlag)).toEqual(expected);
  });
});

describe('countOccurrences', () => {
  it('counts non-overlapping occurrences like str.count', () => {
    const pairs: Array<[string, string]> = [
      ['aaaa', 'aa'],
      ['aaa', 'aa'],
      ['abcabc', 'abc'],
      ['x', 'y'],
      ['😀😀', '😀'],
    ];
    const expected = runPython<number[]>('result = [t.count(s) for t, s in data]', pairs);
    expect(pairs.map(([t, s]) => countOccurrences(t, s))).toEqual(expected);
  });
});

describe('isUniformlyCrlf', () => {
  it('is true only when every line break is CRLF', () => {
    expect(isUniformlyCrlf('a\r\nb\r\n')).toBe(true);
    expect(isUniformlyCrlf('a\r\nb')).toBe(true);
    expect(isUniformlyCrlf('a\nb\n')).toBe(false);
    expect(isUniformlyCrlf('a\r\nb\n')).toBe(false);
    expect(isUniformlyCrlf('a\r\nb\rc\r\n')).toBe(false);
    expect(isUniformlyCrlf('no breaks')).toBe(false);
    expect(isUniformlyCrlf('\n')).toBe(false);
  });
});

describe('utf8EncodeError', () => {
  it("matches Python's UnicodeEncodeError for lone surrogates", () => {
    const texts = ['ok 😀', '\ud800', 'ab\udc00x', 'a\ud800\ud800b', '😀\udfff'];
    const expected = runPython<Array<string | null>>(
      `def enc(t):
    try:
        t.encode('utf-8')
        return None
    except UnicodeEncodeError as e:
        return f'UnicodeEncodeError: {e}'
result = [enc(t) for t in data]`,
      texts,
    );
    expect(texts.map((t) => utf8EncodeError(t)?.observation ?? null)).toEqual(expected);
  });
});

describe('pythonOsError', () => {
  it('renders Python OSError subclasses with errno numbers and repr-quoted paths', () => {
    expect(pythonOsError('ENOENT', "/w/it's.txt").observation).toBe(
      `FileNotFoundError: [Errno 2] No such file or directory: "/w/it's.txt"`,
    );
    expect(pythonOsError('EISDIR', '/w/src').observation).toBe(
      "IsADirectoryError: [Errno 21] Is a directory: '/w/src'",
    );
    expect(pythonOsError('EFBIG', '/w/big').observation).toBe("OSError: [Errno 27] File too large: '/w/big'");
  });
});
