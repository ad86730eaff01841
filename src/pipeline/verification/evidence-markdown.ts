import { codeSpan, formatCount, formatDuration, pluralize, table } from '../../text/markdown.js';
import { describeExit } from '../run-tests.js';
import type { CandidateChoice } from './choose-candidate.js';
import type { TestComparison } from './compare-test-runs.js';
import { WHOLE_SUITE } from './compare-test-runs.js';
import { describeTampering, TESTS_MODIFIED_LABEL, type TamperingReport } from './test-tampering.js';

/**
 * The evidence a pull request carries (issue 6): warnings for the top of the body, the sections
 * after the standard ones, and the extra labels — shaped for `PullRequestBodyInput.warnings`,
 * `PullRequestBodyInput.sections` and `PullRequestRequest.extraLabels` of `publish-change.ts`.
 *
 * Test ids and paths come from the repository and the model's change (untrusted): they are shown in
 * code spans with backticks, pipes and line breaks neutralised, so they cannot break the table,
 * mention people or close issues.
 */

/** The facts of one test run shown next to the table. Units: milliseconds. */
export interface TestRunFacts {
  command: string;
  passed: boolean;
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
}

/** Input of {@link buildEvidence}. */
export interface EvidenceInput {
  /** The base → head comparison of the published change; `null` when no tests ran. */
  comparison: TestComparison | null;
  base?: TestRunFacts | null;
  head?: TestRunFacts | null;
  tampering: TamperingReport;
  /** The best-of-N decision; `null` or absent with a single candidate (no section then). */
  choice?: CandidateChoice | null;
}

/** What goes into the pull request. */
export interface Evidence {
  warnings: string[];
  sections: Array<{ title: string; markdown: string }>;
  labels: string[];
}

/** Ids listed per row of the table; the rest is counted. */
const MAX_IDS_PER_ROW = 10;
const MAX_ID_CHARS = 120;

/**
 * Build the warnings, sections and labels of a pull request from the checks' results.
 *
 * Warnings: the tampering warning (first: it is what a reviewer must see), then a warning when the
 * change breaks tests. Sections: "Tests on base and head" (the table), "Changed test files" (when
 * any), "Candidates" (with more than one). Labels: {@link TESTS_MODIFIED_LABEL} when tampering is
 * flagged.
 */
export function buildEvidence(input: EvidenceInput): Evidence {
  const warnings: string[] = [];
  const sections: Evidence['sections'] = [];
  const labels: string[] = [];
  if (input.tampering.flagged) {
    warnings.push(describeTampering(input.tampering));
    labels.push(TESTS_MODIFIED_LABEL);
  }
  const c = input.comparison;
  if (c && !c.nothingBroken) {
    warnings.push(`${brokenSentence(c)} Do not merge it before that is understood.`);
  }
  if (c) {
    sections.push({
      title: 'Tests on base and head',
      markdown: renderTestComparison(c, { base: input.base ?? null, head: input.head ?? null }),
    });
  }
  if (input.tampering.changedTestFiles.length > 0) {
    sections.push({ title: 'Changed test files', markdown: renderChangedTestFiles(input.tampering) });
  }
  if (input.choice && input.choice.rows.length > 1) {
    sections.push({ title: 'Candidates', markdown: renderCandidates(input.choice) });
  }
  return { warnings, sections, labels };
}

/**
 * The one-sentence verdict of a comparison. It never claims a fix the tests do not show: with no
 * test going from failing to passing it says so.
 */
export function testVerdict(c: TestComparison): string {
  if (!c.nothingBroken) return brokenSentence(c);
  if (c.fixed.length > 0) {
    const what =
      c.granularity === 'suite'
        ? 'The test suite failed on the base branch and passes with this change'
        : `With this change ${count(c.fixed.length, 'test')} that failed on the base branch ${c.fixed.length === 1 ? 'passes' : 'pass'}`;
    return `${what}, and no test that passed breaks.`;
  }
  const newPassing = c.newTests.filter((t) => t.status === 'passed').length;
  const extra =
    newPassing > 0 ? ` (${count(newPassing, 'new test')} ${newPassing === 1 ? 'passes' : 'pass'})` : '';
  return `No test that failed on the base branch passes with this change${extra}: the tests do not show that it fixes the issue. Nothing that passed breaks.`;
}

function brokenSentence(c: TestComparison): string {
  const newFailing = c.newTests.filter((t) => t.status === 'failed').length;
  if (c.broken.length > 0) {
    return c.granularity === 'suite'
      ? 'The test suite passes on the base branch and FAILS with this change.'
      : `This change BREAKS ${count(c.broken.length, 'test')} that passed on the base branch.`;
  }
  if (newFailing > 0)
    return `With this change ${count(newFailing, 'new test')} ${newFailing === 1 ? 'fails' : 'fail'} (a test file that no longer loads shows up this way).`;
  return 'The test run on the patched tree did not complete (timed out, killed, or setup failed).';
}

/**
 * The "Tests on base and head" section: the verdict, a table of the non-empty rows (fixed, broken,
 * still failing, new, removed, passing on both), the base run's command, result and time, and the
 * patched tree's counts. The patched run itself is described once, in the pull request's "Tests"
 * section (`head` only adds its counts here).
 */
export function renderTestComparison(
  c: TestComparison,
  runs: { base: TestRunFacts | null; head: TestRunFacts | null } = { base: null, head: null },
): string {
  const out: string[] = [testVerdict(c)];
  const newIds = c.newTests.map((t) => `${t.id}${t.status === 'passed' ? '' : ` (${t.status})`}`);
  const removedIds = c.removedTests.map((t) => `${t.id}${t.status === 'passed' ? '' : ` (was ${t.status})`}`);
  const rows: Array<[string, string[] | number]> = [
    ['Fixed (failed → passed)', c.fixed],
    ['Broken (passed → failed)', c.broken],
    ['Still failing', c.stillFailing],
  ];
  if (c.granularity === 'per-test') {
    rows.push(['New tests', newIds], ['Removed tests', removedIds], ['Passing on both', c.passingOnBoth]);
  }
  // A row of zeros says nothing the verdict above does not.
  const shown = rows.filter(([, v]) => (typeof v === 'number' ? v : v.length) > 0);
  if (shown.length > 0) {
    out.push(
      table(
        ['Result', 'Count', 'Tests'],
        shown.map(([label, v]) => tableRow(label, v)),
        'lrl',
      ),
    );
  }
  const notes: string[] = [];
  if (c.granularity === 'suite') {
    notes.push(
      `The test runner gave no per-test results, so the runs are compared by exit code (${WHOLE_SUITE.replace(/ \(exit code\)$/, '')}).`,
    );
  }
  if (runs.base)
    notes.push(`Base branch: ${describeRun(runs.base)}${countsText(c.baseCounts)}, in a fresh sandbox.`);
  const headCounts = countsText(c.headCounts).replace(/^ — /, '');
  if (runs.head && headCounts) notes.push(`This change: ${headCounts} (the run under Tests above).`);
  if (notes.length > 0) out.push(notes.join(' '));
  return out.join('\n\n');
}

function tableRow(label: string, value: string[] | number): string[] {
  if (typeof value === 'number') return [label, formatCount(value), ''];
  const shown = value.slice(0, MAX_IDS_PER_ROW).map(code);
  const more = value.length > shown.length ? `, and ${formatCount(value.length - shown.length)} more` : '';
  return [label, formatCount(value.length), `${shown.join(', ')}${more}`];
}

function describeRun(r: TestRunFacts): string {
  const result = r.timedOut
    ? 'timed out'
    : r.passed
      ? 'passed'
      : `failed (${describeExit(r.exitCode, false)})`;
  return `${code(r.command)} ${result} in ${formatDuration(r.durationMs)}`;
}

function countsText(counts: TestComparison['baseCounts']): string {
  if (!counts) return '';
  const parts = (['passed', 'failed', 'skipped'] as const)
    .filter((k) => counts[k] > 0)
    .map((k) => `${formatCount(counts[k])} ${k}`);
  return parts.length > 0 ? ` — ${parts.join(', ')}` : '';
}

/** The "Changed test files" section: one row per file with its added and removed lines. */
export function renderChangedTestFiles(report: TamperingReport): string {
  const rows = report.changedTestFiles
    .slice(0, 50)
    .map((f) => [code(f.path), f.status, `+${formatCount(f.added)}`, `−${formatCount(f.removed)}`]);
  const more =
    report.changedTestFiles.length > rows.length
      ? `\n\n…and ${pluralize(report.changedTestFiles.length - rows.length, 'more test file')}.`
      : '';
  return `${table(['File', 'Change', 'Added', 'Removed'], rows, 'llrr')}${more}`;
}

/** The "Candidates" section: why the chosen candidate won, then one row per candidate. */
export function renderCandidates(choice: CandidateChoice): string {
  const rows = choice.rows.map((r) => [
    formatCount(r.candidate),
    `${r.chosen ? '**chosen** — ' : ''}${escapeCell(r.result)}`,
  ]);
  return [
    `${choice.reason} Each candidate ran independently in its own sandbox; the trajectories of all of them are kept with the job.`,
    table(['Candidate', 'Result'], rows, 'rl'),
  ].join('\n\n');
}

/** A code span for an untrusted name in a table cell: no backticks, pipes or line breaks inside, cut to length. */
function code(text: string): string {
  return codeSpan(text, { max: MAX_ID_CHARS, table: true });
}

/** Table cell text: pipes escaped, line breaks flattened. */
function escapeCell(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').replace(/\|/g, '\\|');
}

const count = pluralize;
