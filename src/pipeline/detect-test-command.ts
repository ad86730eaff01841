import type { Sandbox } from '../sandbox/sandbox.js';

/** A test command found in a repository, and why it was chosen (shown to people). */
export interface DetectedTestCommand {
  command: string;
  /** E.g. "pytest: found tests/ and pyproject.toml". */
  reason: string;
}

/**
 * Guess the test command of a repository from its files, in this order: pytest (pytest.ini,
 * pyproject.toml/setup.cfg/tox.ini with pytest settings, or `test_*.py` / `*_test.py` files), `npm
 * test` (package.json with a `test` script that is not npm's placeholder), `go test ./...` (go.mod),
 * `cargo test` (Cargo.toml), `make test` (a Makefile with a `test:` target).
 *
 * Reads files through the sandbox, so a symlink in the repository cannot make the worker read a host
 * file.
 *
 * @returns the command, or `null` when the repository has no recognisable tests.
 */
export async function detectTestCommand(sandbox: Sandbox): Promise<DetectedTestCommand | null> {
  const { files } = await sandbox.list(undefined, { limit: 20_000 });
  const has = (name: string): boolean => files.includes(name);
  const read = async (name: string): Promise<string> => {
    try {
      return (await sandbox.readFile(name, { maxBytes: 1024 * 1024 })).toString('utf8');
    } catch {
      return '';
    }
  };

  const pyTests = files.filter(
    (f) => /(^|\/)(test_[^/]*|[^/]*_test)\.py$/.test(f) && !f.includes('node_modules/'),
  );
  if (has('pytest.ini') || has('conftest.py') || pyTests.length > 0) {
    return { command: 'python3 -m pytest -q', reason: `pytest: found ${describe(pyTests, 'pytest.ini')}` };
  }
  for (const cfg of ['pyproject.toml', 'setup.cfg', 'tox.ini']) {
    if (has(cfg) && /\[(tool:)?pytest|\[tool\.pytest/.test(await read(cfg))) {
      return { command: 'python3 -m pytest -q', reason: `pytest: settings in ${cfg}` };
    }
  }
  if (has('package.json')) {
    try {
      const pkg = JSON.parse(await read('package.json')) as { scripts?: Record<string, unknown> };
      const test = pkg.scripts?.test;
      if (typeof test === 'string' && !/no test specified/.test(test)) {
        return { command: 'npm test', reason: 'npm: package.json has a test script' };
      }
    } catch {
      // An unparsable package.json is not a test suite.
    }
  }
  if (has('go.mod')) return { command: 'go test ./...', reason: 'go: found go.mod' };
  if (has('Cargo.toml')) return { command: 'cargo test', reason: 'cargo: found Cargo.toml' };
  for (const mk of ['Makefile', 'makefile', 'GNUmakefile']) {
    if (has(mk) && /^test\s*:/m.test(await read(mk)))
      return { command: 'make test', reason: `make: ${mk} has a test target` };
  }
  return null;
}

function describe(found: string[], fallback: string): string {
  if (found.length === 0) return fallback;
  const shown = found.slice(0, 3).join(', ');
  return found.length > 3 ? `${shown} and ${found.length - 3} more test files` : shown;
}
