import { describe, expect, it } from 'vitest';
import { PythonError } from '../../../../src/leaf/tools/python-error.js';
import {
  displayPath,
  isInsideWorkspace,
  pathlibNormalize,
  resolveToolPath,
  toolPathArgument,
} from '../../../../src/leaf/tools/tool-path.js';
import { runPython } from './run-python.js';

const WS = '/work/repo';

describe('resolveToolPath', () => {
  it('builds the same absolute path as the reference (pathlib join, expanduser)', () => {
    const values = [
      'a.txt',
      './a//b/./c/',
      'x/../y',
      '/etc/passwd',
      '//srv/x',
      '///srv/x',
      '~',
      '~/notes.md',
      'dir/',
      '..',
      '~root/x',
    ];
    const expected = runPython<string[]>(
      "import os, pathlib\nos.environ['HOME'] = '/root'\n" +
        "result = [str((lambda p: p if p.is_absolute() else pathlib.Path('/work/repo') / p)(pathlib.Path(v).expanduser())) for v in data]",
      values,
    );
    expect(values.map((v) => resolveToolPath(v, WS, '/root'))).toEqual(expected);
  });

  it('refuses ~user for unknown users like pathlib', () => {
    expect(() => resolveToolPath('~nobody-here/x', WS, '/root')).toThrow(PythonError);
  });
});

describe('pathlibNormalize', () => {
  it('drops empty and . components but keeps ..', () => {
    expect(pathlibNormalize('a//b/./c/')).toBe('a/b/c');
    expect(pathlibNormalize('/a/../b')).toBe('/a/../b');
    expect(pathlibNormalize('')).toBe('.');
  });
});

describe('displayPath', () => {
  it('shows workspace paths relative and others unchanged', () => {
    expect(displayPath('/work/repo/pkg/mod.py', WS)).toBe('pkg/mod.py');
    expect(displayPath('/work/repo', WS)).toBe('.');
    expect(displayPath('/work/repo/x/../y.txt', WS)).toBe('y.txt');
    expect(displayPath('/work/repository/a', WS)).toBe('/work/repository/a');
    expect(displayPath('/work/repo/../other/a', WS)).toBe('/work/repo/../other/a');
  });

  it('knows what is inside the workspace', () => {
    expect(isInsideWorkspace('/work/repo/a/../b', WS)).toBe(true);
    expect(isInsideWorkspace('/work/repo/../x', WS)).toBe(false);
    expect(isInsideWorkspace('/work/repox', WS)).toBe(false);
  });
});

describe('toolPathArgument', () => {
  const run = (args: Record<string, unknown>): string => {
    try {
      return toolPathArgument(args, 'file_path', WS, '/root');
    } catch (err) {
      return (err as PythonError).observation;
    }
  };

  it('takes file_path, falls back to path when file_path is falsy, else ValueError', () => {
    expect(run({ file_path: 'a.txt' })).toBe('/work/repo/a.txt');
    expect(run({ path: 'b.txt' })).toBe('/work/repo/b.txt');
    expect(run({ file_path: '', path: 'b.txt' })).toBe('/work/repo/b.txt');
    expect(run({ file_path: 0 })).toBe('ValueError: file_path is required');
    expect(run({})).toBe('ValueError: file_path is required');
    expect(run({ file_path: 12 })).toBe('/work/repo/12');
    expect(run({ file_path: 'a\0b' })).toBe('ValueError: embedded null byte');
  });

  it('ignores inherited properties', () => {
    expect(run(JSON.parse('{"__proto__": {"file_path": "x"}}') as Record<string, unknown>)).toBe(
      'ValueError: file_path is required',
    );
  });
});
