import { XMLParser } from 'fast-xml-parser';
import { z } from 'zod';

/**
 * Parsers of the per-test reports a test run leaves in the sandbox (issue 6, "Tests on base and
 * head"); the comparison of base and head lives in `verification/compare-test-runs.ts`. Three report
 * formats are read:
 *
 * - JUnit XML, as written by pytest `--junitxml`, vitest's `junit` reporter and `jest-junit`
 *   (the de-facto schema of Ant's JUnit task: `testsuites > testsuite > testcase` with `failure`,
 *   `error` and `skipped` children);
 * - `go test -json` (cmd/test2json: one JSON event per line with `Action`, `Package`, `Test`,
 *   `Output`);
 * - jest's own `--json` report (`testResults[].assertionResults[]`).
 *
 * Reports come from inside the sandbox, written by code the model may have changed: they are
 * parsed defensively (size-capped, zod-checked, entity expansion limited) and a report that does not
 * parse is treated as absent.
 */

/** Status of one test. `failed` includes errors (pytest collection and fixture errors). */
export type TestStatus = 'passed' | 'failed' | 'skipped';

/** One test of a run. */
export interface TestCaseResult {
  /**
   * Stable id across runs: JUnit `classname::name` (pytest `tests.test_calc::test_add`, vitest
   * `test/a.test.ts::suite > case`), go `package/TestName`, jest `file::full name`.
   */
  id: string;
  status: TestStatus;
  /** First line of the failure message, cut to 200 characters (untrusted test output). */
  message?: string;
}

/** Formats of per-test reports. */
export type TestReportFormat = 'junit-xml' | 'go-test-json' | 'jest-json';

/** Reports larger than this many bytes are not parsed (the run falls back to its exit code). */
export const MAX_REPORT_BYTES = 32 * 1024 * 1024;
/** Tests kept from one report (more are dropped; a suite this size is compared by exit code). */
export const MAX_TESTS = 50_000;

const MAX_MESSAGE_CHARS = 200;

function firstLine(text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined;
  const line = decodeCharRefs(text).trim().split('\n')[0]?.trim() ?? '';
  if (line === '') return undefined;
  return line.length > MAX_MESSAGE_CHARS ? `${line.slice(0, MAX_MESSAGE_CHARS - 1)}…` : line;
}

/** XML character references (`&#10;`, `&#x41;`), which the parser leaves as they are. */
function decodeCharRefs(text: string): string {
  return text.replace(
    /&#(?:x([0-9a-fA-F]{1,6})|([0-9]{1,7}));/g,
    (ref, hex: string | undefined, dec: string | undefined) => {
      const code = hex !== undefined ? parseInt(hex, 16) : Number(dec);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : ref;
    },
  );
}

const RANK: Record<TestStatus, number> = { skipped: 0, passed: 1, failed: 2 };

/** Merge duplicate ids keeping the worst status (a test reported twice counts as failed if either run failed). */
function addResult(byId: Map<string, TestCaseResult>, result: TestCaseResult): void {
  const prev = byId.get(result.id);
  if (!prev || RANK[result.status] > RANK[prev.status]) byId.set(result.id, result);
}

const JUNIT_ARRAYS = new Set(['testsuites', 'testsuite', 'testcase', 'failure', 'error', 'skipped']);

/**
 * Parse a JUnit XML report.
 *
 * A `testcase` with a `failure` or `error` child is `failed`; with a `skipped` child `skipped`
 * (pytest reports xfail as skipped); else `passed`. Nested `testsuite` elements are walked.
 *
 * @returns the tests, or `null` when the text is not a JUnit report (not XML, no `testsuite` or
 *   `testsuites` root, or larger than {@link MAX_REPORT_BYTES}).
 */
export function parseJUnitXml(xml: string): TestCaseResult[] | null {
  if (Buffer.byteLength(xml) > MAX_REPORT_BYTES) return null;
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@_',
    parseTagValue: false,
    parseAttributeValue: false,
    isArray: (name) => JUNIT_ARRAYS.has(name),
    // fast-xml-parser bounds DOCTYPE entity expansion by default (count, depth, expanded length).
    maxNestedTags: 64,
  });
  let doc: unknown;
  try {
    doc = parser.parse(xml);
  } catch {
    return null;
  }
  if (typeof doc !== 'object' || doc === null) return null;
  const root = doc as Record<string, unknown>;
  const suites = [...asArray(root.testsuites), ...asArray(root.testsuite)];
  if (suites.length === 0) return null;
  const byId = new Map<string, TestCaseResult>();
  const walk = (node: unknown, depth: number): void => {
    if (typeof node !== 'object' || node === null || depth > 32 || byId.size >= MAX_TESTS) return;
    const n = node as Record<string, unknown>;
    for (const tc of asArray(n.testcase)) {
      if (typeof tc !== 'object' || tc === null) continue;
      const t = tc as Record<string, unknown>;
      const name = typeof t['@_name'] === 'string' ? t['@_name'] : '';
      const classname = typeof t['@_classname'] === 'string' ? t['@_classname'] : '';
      if (name === '' && classname === '') continue;
      const id = classname ? `${classname}::${name}` : name;
      const failure = [...asArray(t.failure), ...asArray(t.error)][0];
      if (failure !== undefined) {
        addResult(byId, { id, status: 'failed', message: messageOf(failure) });
      } else if (asArray(t.skipped).length > 0) {
        addResult(byId, { id, status: 'skipped' });
      } else {
        addResult(byId, { id, status: 'passed' });
      }
    }
    for (const child of [...asArray(n.testsuite), ...asArray(n.testsuites)]) walk(child, depth + 1);
  };
  for (const s of suites) walk(s, 0);
  return [...byId.values()];
}

function asArray(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

function messageOf(node: unknown): string | undefined {
  if (typeof node === 'string') return firstLine(node);
  if (typeof node !== 'object' || node === null) return undefined;
  const n = node as Record<string, unknown>;
  return firstLine(n['@_message']) ?? firstLine(n['#text']);
}

const goEventSchema = z.object({
  Action: z.string(),
  Package: z.string().optional(),
  Test: z.string().optional(),
  Output: z.string().optional(),
});

/** What {@link parseGoTestJson} returns. */
export interface GoTestJsonResult {
  tests: TestCaseResult[];
  /**
   * The run's output as people read it: the `Output` of every event in order, plus any line that
   * was not an event (build errors go to stderr as plain text).
   */
  output: string;
}

/**
 * Parse the output of `go test -json` (cmd/test2json; `go doc test2json` lists the actions).
 *
 * Each test's last `pass`/`fail`/`skip` event gives its status; subtests are tests of their own
 * (`TestX/case`). A package that failed although none of its tests failed (build failure, panic in
 * `TestMain`, `init`) is reported as a test `<package> [package]`; a package with tests that did not
 * fail that way has that entry `passed`, so a build broken by the patch shows as broken.
 *
 * @returns the tests and the readable output, or `null` when no line is a test2json event.
 */
export function parseGoTestJson(text: string): GoTestJsonResult | null {
  if (Buffer.byteLength(text) > MAX_REPORT_BYTES) return null;
  const byId = new Map<string, TestCaseResult>();
  const lastOutput = new Map<string, string>();
  const packages = new Map<string, { status: 'pass' | 'fail' | 'skip'; testFailed: boolean }>();
  const output: string[] = [];
  let events = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) {
      if (line !== '') output.push(`${line}\n`);
      continue;
    }
    let parsed;
    try {
      parsed = goEventSchema.safeParse(JSON.parse(line));
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success) {
      output.push(`${line}\n`);
      continue;
    }
    events++;
    const e = parsed.data;
    const pkg = e.Package ?? '';
    if (e.Output !== undefined) {
      output.push(e.Output);
      if (e.Test && e.Output.trim() !== '' && !/^\s*(=== |--- |PASS|FAIL|ok )/.test(e.Output)) {
        lastOutput.set(`${pkg}/${e.Test}`, e.Output);
      }
    }
    if (e.Action !== 'pass' && e.Action !== 'fail' && e.Action !== 'skip') continue;
    if (e.Test) {
      const id = `${pkg}/${e.Test}`;
      const status: TestStatus = e.Action === 'pass' ? 'passed' : e.Action === 'fail' ? 'failed' : 'skipped';
      byId.set(id, {
        id,
        status,
        ...(status === 'failed' ? { message: firstLine(lastOutput.get(id)) } : {}),
      });
      if (status === 'failed') {
        const p = packages.get(pkg) ?? { status: 'pass', testFailed: false };
        p.testFailed = true;
        packages.set(pkg, p);
      }
    } else if (pkg) {
      const p = packages.get(pkg) ?? { status: 'pass', testFailed: false };
      p.status = e.Action;
      packages.set(pkg, p);
    }
  }
  if (events === 0) return null;
  for (const [pkg, p] of packages) {
    if (p.status === 'skip') continue; // "[no test files]"
    const id = `${pkg} [package]`;
    byId.set(
      id,
      p.status === 'fail' && !p.testFailed
        ? { id, status: 'failed', message: 'the package failed outside its tests (build failure or panic)' }
        : { id, status: 'passed' },
    );
  }
  return { tests: [...byId.values()].slice(0, MAX_TESTS), output: output.join('') };
}

const jestReportSchema = z.object({
  testResults: z.array(
    z.object({
      name: z.string(),
      status: z.string().optional(),
      message: z.string().optional(),
      assertionResults: z
        .array(
          z.object({
            fullName: z.string().optional(),
            title: z.string().optional(),
            ancestorTitles: z.array(z.string()).optional(),
            status: z.string(),
            failureMessages: z.array(z.string()).optional(),
          }),
        )
        .optional(),
    }),
  ),
});

/**
 * Parse jest's `--json` report (the `AggregatedResult` of `@jest/test-result`).
 *
 * Assertion status `passed` → passed, `failed` → failed, `pending`/`skipped`/`todo`/`disabled` →
 * skipped. A test file that failed to run (syntax error, failing import) has no assertions: it is
 * reported as a test `<file> [file]`.
 *
 * @param rootDir the absolute path of the repository in the sandbox: jest reports absolute file
 *   names, which are made relative to it so ids match across sandboxes.
 * @returns the tests, or `null` when the text is not such a report.
 */
export function parseJestJson(json: string, rootDir: string): TestCaseResult[] | null {
  if (Buffer.byteLength(json) > MAX_REPORT_BYTES) return null;
  let parsed;
  try {
    parsed = jestReportSchema.safeParse(JSON.parse(json));
  } catch {
    return null;
  }
  if (!parsed.success) return null;
  const prefix = rootDir.endsWith('/') ? rootDir : `${rootDir}/`;
  const byId = new Map<string, TestCaseResult>();
  for (const file of parsed.data.testResults) {
    const name = file.name.startsWith(prefix) ? file.name.slice(prefix.length) : file.name;
    const assertions = file.assertionResults ?? [];
    if (assertions.length === 0) {
      if (file.status === 'failed') {
        addResult(byId, { id: `${name} [file]`, status: 'failed', message: firstLine(file.message) });
      }
      continue;
    }
    for (const a of assertions) {
      const full = a.fullName ?? [...(a.ancestorTitles ?? []), a.title ?? ''].join(' ');
      const status: TestStatus =
        a.status === 'passed' ? 'passed' : a.status === 'failed' ? 'failed' : 'skipped';
      addResult(byId, {
        id: `${name}::${full}`,
        status,
        ...(status === 'failed' ? { message: firstLine(a.failureMessages?.[0]) } : {}),
      });
    }
  }
  return [...byId.values()].slice(0, MAX_TESTS);
}
