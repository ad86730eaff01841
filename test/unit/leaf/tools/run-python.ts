import { execFileSync } from 'node:child_process';

/**
 * Run a Python 3 snippet with `input` as JSON on stdin (available as `data`) and return what it prints
 * with `print(json.dumps(result))` as the variable `result`. Used to compare our emulation of Python
 * semantics against the real interpreter (`/usr/bin/python3`, see the shop's test rules).
 */
export function runPython<T>(code: string, input: unknown): T {
  const script = `import json, sys\ndata = json.loads(sys.stdin.read())\n${code}\nprint(json.dumps(result))\n`;
  let out: string;
  try {
    out = execFileSync('/usr/bin/python3', ['-c', script], {
      input: JSON.stringify(input),
      encoding: 'utf8',
      timeout: 20_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    throw new Error(
      `python3 failed (install python3 at /usr/bin/python3 to run these differential tests): ${String(err)}`,
      { cause: err },
    );
  }
  return JSON.parse(out) as T;
}
