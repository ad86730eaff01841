import picomatch from 'picomatch';
import type { PatchFile, PatchFileStatus } from './parse-patch.js';
import type { TestComparison } from './compare-test-runs.js';

/**
 * Test tampering (issue 6, "Test tampering"): agents have been seen deleting or loosening the tests
 * they could not pass. The pull request lists every changed test file, and flags what weakens the
 * suite: deleted test files, test definitions removed, tests that ran on the base tree and are gone
 * on the patched one, newly added skip / xfail / only markers, assertions removed, and changes to
 * which tests the runner collects. Any flag adds the {@link TESTS_MODIFIED_LABEL} label and a
 * warning at the top of the pull request; the change itself is not refused (changing a wrong test
 * can be the right fix — a person decides).
 */

/** Label added to a pull request whose change flags test tampering. */
export const TESTS_MODIFIED_LABEL = 'frognano:tests-modified';

/** Test files by convention of the common runners (picomatch globs, matched with `dot: true`). */
export const TEST_FILE_GLOBS: readonly string[] = [
  '**/test_*.py',
  '**/*_test.py',
  '**/conftest.py',
  '**/tests/**',
  '**/test/**',
  '**/__tests__/**',
  '**/spec/**',
  '**/*.test.*',
  '**/*.spec.*',
  '**/*_test.go',
  '**/*_spec.rb',
  '**/*Test.java',
  '**/*Tests.java',
  '**/*Test.kt',
  '**/*Tests.cs',
];

/** Files that decide which tests run (runner configuration). */
const TEST_CONFIG_GLOBS: readonly string[] = [
  '**/pytest.ini',
  '**/tox.ini',
  '**/setup.cfg',
  '**/pyproject.toml',
  '**/conftest.py',
  '**/package.json',
  '**/jest.config.*',
  '**/vitest.config.*',
  '**/vitest.workspace.*',
  '**/vite.config.*',
  '**/Makefile',
];

const isTestGlob = picomatch([...TEST_FILE_GLOBS], { dot: true });
const isConfigGlob = picomatch([...TEST_CONFIG_GLOBS], { dot: true });

/** Whether a repository path is a test file (see {@link TEST_FILE_GLOBS}). */
export function isTestPath(path: string): boolean {
  return isTestGlob(path);
}

/** A test file the patch changes. Units: lines. */
export interface ChangedTestFile {
  path: string;
  status: PatchFileStatus;
  added: number;
  removed: number;
}

/** One reason to look closely at the tests of a change. */
export type TamperingFlag =
  | { kind: 'deleted_test_file'; path: string; removed: number }
  | {
      /** A test definition (`def test_x`, `func TestX`, `it('…')`) removed and not added back anywhere. */
      kind: 'removed_test';
      path: string;
      /** Line in the base file. */
      line: number;
      name: string;
    }
  | {
      /** Tests that ran on the base tree and are absent from the run on the patched tree. */
      kind: 'tests_gone';
      ids: string[];
    }
  | {
      /** A newly added marker that skips, expects failure, or narrows the run (`.only`). */
      kind: 'skip_marker';
      path: string;
      /** Line in the patched file. */
      line: number;
      marker: string;
    }
  | {
      /** A test file lost more assertion lines than it gained. */
      kind: 'assertions_removed';
      path: string;
      removed: number;
      added: number;
    }
  | {
      /** A runner option that leaves tests out (`--deselect`, `collect_ignore`, `testPathIgnorePatterns`…). */
      kind: 'test_selection';
      path: string;
      line: number;
      option: string;
    };

/** What {@link detectTestTampering} found. */
export interface TamperingReport {
  changedTestFiles: ChangedTestFile[];
  flags: TamperingFlag[];
  /** True when any flag is set: add {@link TESTS_MODIFIED_LABEL} and the warning. */
  flagged: boolean;
}

/** Markers, each with the name shown to people. Matched on added lines of test files. */
const MARKERS: ReadonlyArray<{ re: RegExp; name: (m: RegExpExecArray) => string }> = [
  // pytest (https://docs.pytest.org/en/stable/how-to/skipping.html)
  { re: /\bpytest\.mark\.(skip|skipif|xfail)\b/, name: (m) => `pytest.mark.${m[1]}` },
  { re: /\bpytest\.(skip|xfail|importorskip)\s*\(/, name: (m) => `pytest.${m[1]}()` },
  // unittest (https://docs.python.org/3/library/unittest.html#skipping-tests-and-expected-failures)
  { re: /@(?:unittest\.)?(skip|skipIf|skipUnless|expectedFailure)\b/, name: (m) => `@unittest.${m[1]}` },
  { re: /\.skipTest\s*\(/, name: () => 'skipTest()' },
  { re: /\braise\s+(?:unittest\.)?SkipTest\b/, name: () => 'raise SkipTest' },
  // jest / vitest / mocha
  {
    re: /\b(it|test|describe|suite|context|bench)((?:\.\w+)*)\.(skip|only|todo|skipIf|fails|failing)\b/,
    name: (m) => `${m[1]}${m[2]}.${m[3]}`,
  },
  { re: /(?:^|[^.\w$])(xit|xtest|xdescribe|xcontext|fit|fdescribe|ftest)\s*\(/, name: (m) => `${m[1]}()` },
  // go (https://pkg.go.dev/testing#T.Skip)
  { re: /\b(t|b|tb|f)\.(Skip|Skipf|SkipNow)\s*\(/, name: (m) => `${m[1]}.${m[2]}()` },
  // rust, JUnit 4/5
  { re: /#\[ignore\b/, name: () => '#[ignore]' },
  { re: /@(Disabled|Ignore)\b/, name: (m) => `@${m[1]}` },
];

/** Definitions of single tests, for "removed_test". Group 1 is the test's name. */
const DEFINITIONS: readonly RegExp[] = [
  /^\s*(?:async\s+)?def\s+(test\w*)\s*\(/,
  /^\s*class\s+(Test\w*)\b/,
  /^func\s+((?:Test|Fuzz)\w*)\s*\(/,
  /^\s*(?:it|test)\s*\(\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|`([^`]*)`)/,
];

/** Lines that assert something. */
const ASSERTION =
  /\bassert\w*\b|\bexpect\s*\(|\bt\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\b|\bshould\.|\bpytest\.raises\b|\bassert_\w+!/;

/** Runner options that leave tests out. Matched on added lines of runner configuration files. */
const SELECTION =
  /(--deselect\b|--ignore(?:-glob)?\b|\bcollect_ignore(?:_glob)?\b|\btestPathIgnorePatterns\b|\bmodulePathIgnorePatterns\b|--testPathIgnorePatterns\b|\bexclude\s*:|\b-k\s+['"]?not\b)/;

function definitionName(text: string): string | null {
  for (const re of DEFINITIONS) {
    const m = re.exec(text);
    if (m) return m[1] ?? m[2] ?? m[3] ?? null;
  }
  return null;
}

/** The last part of a test id, without parameters: `tests.test_x::TestA::test_b[1]` → `test_b`. */
function leafName(id: string): string {
  const last = id.split(/::|\/| > /).pop() ?? id;
  return last.replace(/\[.*\]$/, '').trim();
}

/**
 * Look for test tampering in a patch.
 *
 * @param input.files the parsed patch.
 * @param input.comparison the base → head comparison, when both runs gave per-test results: its
 *   removed tests are flagged as `tests_gone` — unless the head run has new failing tests, which
 *   means the patched tree failed to collect (e.g. an import error) and the removal is that
 *   failure, already reported as a failing test, not a deletion.
 * @param input.isTestFile override of {@link isTestPath} (tests, repositories with other layouts).
 */
export function detectTestTampering(input: {
  files: readonly PatchFile[];
  comparison?: TestComparison | null;
  isTestFile?: (path: string) => boolean;
}): TamperingReport {
  const isTest = input.isTestFile ?? isTestPath;
  const changedTestFiles: ChangedTestFile[] = [];
  const flags: TamperingFlag[] = [];

  // Names defined anywhere in the added lines: a test moved to another file is not removed.
  const addedNames = new Set<string>();
  for (const f of input.files) {
    for (const l of f.addedLines) {
      const name = definitionName(l.text);
      if (name) addedNames.add(name);
    }
  }
  const removedNames = new Set<string>();

  for (const file of input.files) {
    const test = isTest(file.path);
    if (test) {
      changedTestFiles.push({
        path: file.path,
        status: file.status,
        added: file.addedLines.length,
        removed: file.removedLines.length,
      });
      if (file.status === 'deleted') {
        flags.push({ kind: 'deleted_test_file', path: file.path, removed: file.removedLines.length });
      }
      for (const l of file.removedLines) {
        const name = definitionName(l.text);
        if (!name) continue;
        removedNames.add(name);
        if (!addedNames.has(name) && file.status !== 'deleted') {
          flags.push({ kind: 'removed_test', path: file.path, line: l.line, name });
        }
      }
      const removedLines = new Set(file.removedLines.map((l) => l.text.trim()));
      for (const l of file.addedLines) {
        // A line moved within the file (removed and added back as is) is not new.
        if (removedLines.has(l.text.trim())) continue;
        for (const { re, name } of MARKERS) {
          const m = re.exec(l.text);
          if (m) {
            flags.push({ kind: 'skip_marker', path: file.path, line: l.line, marker: name(m) });
            break;
          }
        }
      }
      if (file.status === 'modified') {
        const removed = file.removedLines.filter((l) => ASSERTION.test(l.text)).length;
        const added = file.addedLines.filter((l) => ASSERTION.test(l.text)).length;
        if (removed > added) flags.push({ kind: 'assertions_removed', path: file.path, removed, added });
      }
    }
    if (isConfigGlob(file.path) && file.status !== 'deleted') {
      const removedLines = new Set(file.removedLines.map((l) => l.text.trim()));
      for (const l of file.addedLines) {
        if (removedLines.has(l.text.trim())) continue;
        const m = SELECTION.exec(l.text);
        if (m)
          flags.push({ kind: 'test_selection', path: file.path, line: l.line, option: (m[1] ?? '').trim() });
      }
    }
  }

  const c = input.comparison;
  if (c && c.granularity === 'per-test' && !c.newTests.some((t) => t.status === 'failed')) {
    // Tests whose definition the patch removed (or moved) are reported above, or are a move.
    const unexplained = c.removedTests.filter((t) => !removedNames.has(leafName(t.id))).map((t) => t.id);
    if (unexplained.length > 0) flags.push({ kind: 'tests_gone', ids: unexplained });
  }
  return { changedTestFiles, flags, flagged: flags.length > 0 };
}

/**
 * The warning at the top of the pull request (plain Markdown text, one paragraph and a list).
 *
 * @param report a report with `flagged` true.
 */
export function describeTampering(report: TamperingReport): string {
  const items = report.flags.slice(0, 20).map((f) => `- ${describeFlag(f)}`);
  if (report.flags.length > items.length) items.push(`- …and ${report.flags.length - items.length} more.`);
  return [
    'This change modifies the tests in ways that can hide a bug instead of fixing it. ' +
      'Check these before trusting the test results:',
    ...items,
  ].join('\n');
}

function describeFlag(f: TamperingFlag): string {
  switch (f.kind) {
    case 'deleted_test_file':
      return `test file \`${f.path}\` deleted (${f.removed} line${f.removed === 1 ? '' : 's'})`;
    case 'removed_test':
      return `test \`${f.name}\` removed from \`${f.path}\` (line ${f.line} on the base branch)`;
    case 'tests_gone': {
      const shown = f.ids.slice(0, 5).map((id) => `\`${id}\``);
      const more = f.ids.length > shown.length ? ` and ${f.ids.length - shown.length} more` : '';
      return `${f.ids.length === 1 ? 'a test that ran' : `${f.ids.length} tests that ran`} on the base branch no longer ${f.ids.length === 1 ? 'runs' : 'run'}: ${shown.join(', ')}${more}`;
    }
    case 'skip_marker':
      return `\`${f.marker}\` added at line ${f.line} of \`${f.path}\``;
    case 'assertions_removed':
      return `\`${f.path}\` loses assertions (${f.removed} assertion lines removed, ${f.added} added)`;
    case 'test_selection':
      return `\`${f.option}\` added at line ${f.line} of \`${f.path}\` (leaves tests out of the run)`;
  }
}
