import type { TestCaseResult, TestStatus } from '../pipeline/test-reports/test-report-parsers.js';

/**
 * Test ids as SWE-bench writes them in `FAIL_TO_PASS` / `PASS_TO_PASS`: pytest node ids
 * (`tests/test_x.py::TestA::test_b[1]`, https://docs.pytest.org/en/stable/example/markers.html#node-id).
 *
 * The per-test reports (test-reports/) give pytest's JUnit ids, `classname::name`, where the
 * classname is the module path with dots (`tests.test_x.TestA`). Mined tasks and grading both map
 * through {@link toTestNodeId}, so the ids of a task and of its grading run always agree.
 */

const DOTTED = /^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*$/;

/**
 * The node id of a test id from a per-test report.
 *
 * A JUnit id whose classname is a dotted Python name is mapped when a prefix of it names a `.py`
 * file of the tree (longest prefix wins): `tests.test_x.TestA::test_b` with `tests/test_x.py` in
 * `files` → `tests/test_x.py::TestA::test_b`. Every other id (go `pkg/TestX`, jest `file::name`,
 * vitest `file::suite > case`, a classname that names no file) is returned unchanged.
 *
 * @param files the tracked files of the tree the tests ran on (repository-relative, `/`).
 */
export function toTestNodeId(id: string, files: ReadonlySet<string>): string {
  const sep = id.indexOf('::');
  if (sep <= 0) return id;
  const classname = id.slice(0, sep);
  const name = id.slice(sep + 2);
  if (!DOTTED.test(classname)) return id;
  const parts = classname.split('.');
  for (let i = parts.length; i >= 1; i--) {
    const path = `${parts.slice(0, i).join('/')}.py`;
    if (files.has(path)) return [path, ...parts.slice(i), name].join('::');
  }
  return id;
}

/** The statuses of a run's tests by node id (duplicates keep the worst: failed over passed over skipped). */
export function statusesByNodeId(
  tests: readonly TestCaseResult[],
  files: ReadonlySet<string>,
): Map<string, TestStatus> {
  const rank: Record<TestStatus, number> = { skipped: 0, passed: 1, failed: 2 };
  const out = new Map<string, TestStatus>();
  for (const t of tests) {
    const id = toTestNodeId(t.id, files);
    const prev = out.get(id);
    if (prev === undefined || rank[t.status] > rank[prev]) out.set(id, t.status);
  }
  return out;
}
