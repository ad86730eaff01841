import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import picomatch from 'picomatch';
import { applyPatch } from '../git/apply-patch.js';
import { runGit } from '../git/run-git.js';
import { isTestPath } from '../pipeline/verification/test-tampering.js';
import type { TestStatus } from '../pipeline/test-reports/test-report-parsers.js';
import type { SweBenchTask } from './swe-bench-task.js';
import { changedPaths, checkoutClean, cloneAtCommit, diffOfPaths } from './task-workspace.js';
import { runTaskTests, type TaskTestSettings } from './run-task-tests.js';

/**
 * `eval mine`: SWE-bench instances from a repository's own history (issue 15). A commit becomes a
 * task when its message says it fixes something and it changes both source and test files (test
 * files as the test-tampering check sees them, `isTestPath`); its tests, run in the sandbox on the
 * parent with the commit's test change ("before") and on the commit ("after"), give `FAIL_TO_PASS`
 * and `PASS_TO_PASS` as SWE-bench defines them.
 */

/** Why a commit is not a task. */
export const DROP_REASONS = [
  'no fix keyword',
  'root commit',
  'no test change',
  'no source change',
  'no per-test report',
  'tests fail after the fix',
  'tests do not fail before the fix',
] as const;
export type DropReason = (typeof DROP_REASONS)[number];

/** "fix", "fixes", "fixed", "bug", "bugfix", "hotfix", or a closing keyword with an issue (`closes #12`). */
const FIX_WORDS =
  /\b(?:fix(?:e[sd]|ing)?|bug(?:fix)?s?|hotfix(?:es)?)\b|\b(?:close[sd]?|resolve[sd]?)\s+#\d+/i;
const ISSUE_REF = /\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s+#(\d+)\b/gi;
/** Documentation is neither source nor test. */
const isDocPath = picomatch(['**/*.md', '**/*.rst', '**/*.txt', 'docs/**', '**/LICENSE*', '**/CHANGELOG*'], {
  dot: true,
  nocase: true,
});

/** Whether a commit message looks like a fix (case-insensitive, whole words). */
export function looksLikeFix(message: string): boolean {
  return FIX_WORDS.test(message);
}

/** Issue numbers a commit message says it fixes or closes (`Fixes #12`), in order, without repeats. */
export function referencedIssues(message: string): number[] {
  return [...new Set([...message.matchAll(ISSUE_REF)].map((m) => Number(m[1])))];
}

/** Options of {@link mineTasks}. */
export interface MineTasksOptions extends TaskTestSettings {
  /** The repository (a local clone, working tree or bare). */
  repoDir: string;
  /** `owner/name` written as each task's `repo`. */
  repoName: string;
  /** Only commits after this date (anything `git log --since` takes). */
  since?: string;
  /** Stop after this many tasks. */
  limit?: number;
  /** The issue's title and body, or `null` when unknown (then the commit message is the problem statement). */
  fetchIssue?: (issue: number) => Promise<string | null>;
  /** Called after each commit examined. */
  onCommit?: (commit: MinedCommit) => void;
}

/** One examined commit. */
export interface MinedCommit {
  sha: string;
  subject: string;
  /** `null` when it became a task. */
  dropped: DropReason | null;
}

/** What {@link mineTasks} found. */
export interface MineReport {
  tasks: SweBenchTask[];
  /** Every examined commit, newest first. */
  commits: MinedCommit[];
  /** Dropped commits by reason (every reason present, zero included). */
  counts: Record<DropReason, number>;
}

interface LogEntry {
  sha: string;
  parent: string | null;
  message: string;
  date: string;
}

/**
 * Mine tasks from the first-parent history of `HEAD`, newest commit first (so `limit` keeps the
 * most recent tasks). Each task also carries `mined_from_commit` (the fix commit's id; SWE-bench
 * readers ignore unknown fields) and `created_at` (its committer date). Each candidate commit costs
 * two test runs, each in a fresh sandbox.
 *
 * @throws AppError `GIT_FAILED` when the repository cannot be read; sandbox errors
 *   (`EGRESS_NOT_BLOCKED`, `SANDBOX_UNAVAILABLE`…) and `CANCELLED` end the mining.
 */
export async function mineTasks(options: MineTasksOptions): Promise<MineReport> {
  const report: MineReport = {
    tasks: [],
    commits: [],
    counts: Object.fromEntries(DROP_REASONS.map((r) => [r, 0])) as Record<DropReason, number>,
  };
  const tmp = await mkdtemp(join(tmpdir(), 'frognano-mine-'));
  try {
    const work = join(tmp, 'repo');
    await cloneAtCommit(options.repoDir, 'HEAD', work, { signal: options.signal });
    for (const entry of await firstParentLog(work, options.since)) {
      if (options.limit !== undefined && report.tasks.length >= options.limit) break;
      const outcome = await examineCommit(work, entry, options);
      const commit: MinedCommit = {
        sha: entry.sha,
        subject: entry.message.split('\n')[0] ?? '',
        dropped: typeof outcome === 'string' ? outcome : null,
      };
      if (typeof outcome === 'string') report.counts[outcome]++;
      else report.tasks.push(outcome);
      report.commits.push(commit);
      options.onCommit?.(commit);
    }
    return report;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

async function firstParentLog(dir: string, since: string | undefined): Promise<LogEntry[]> {
  const r = await runGit(
    [
      'log',
      '--first-parent',
      '-z',
      '--format=%H%x00%P%x00%cI%x00%B',
      ...(since ? [`--since=${since}`] : []),
      'HEAD',
    ],
    { cwd: dir },
  );
  const fields = r.stdout.toString('utf8').split('\0');
  const out: LogEntry[] = [];
  for (let i = 0; i + 3 < fields.length; i += 4) {
    const sha = (fields[i] ?? '').replace(/^\n/, '');
    out.push({
      sha,
      parent: (fields[i + 1] ?? '').split(' ')[0] || null,
      date: fields[i + 2] ?? '',
      message: (fields[i + 3] ?? '').trim(),
    });
  }
  return out;
}

/** The task of one commit, or why there is none. */
async function examineCommit(
  dir: string,
  entry: LogEntry,
  options: MineTasksOptions,
): Promise<SweBenchTask | DropReason> {
  if (!looksLikeFix(entry.message)) return 'no fix keyword';
  if (!entry.parent) return 'root commit';
  const paths = await changedPaths(dir, entry.parent, entry.sha);
  const testPaths = paths.filter((p) => isTestPath(p));
  const sourcePaths = paths.filter((p) => !isTestPath(p) && !isDocPath(p));
  if (testPaths.length === 0) return 'no test change';
  if (sourcePaths.length === 0) return 'no source change';
  const testPatch = await diffOfPaths(dir, entry.parent, entry.sha, testPaths);
  const goldPatch = await diffOfPaths(
    dir,
    entry.parent,
    entry.sha,
    paths.filter((p) => !isTestPath(p)),
  );

  await checkoutClean(dir, entry.parent, { signal: options.signal });
  await applyPatch(dir, testPatch, { signal: options.signal });
  const short = entry.sha.slice(0, 12);
  const before = await runTaskTests(dir, `mine-${short}-before`, options);
  await checkoutClean(dir, entry.sha, { signal: options.signal });
  const after = await runTaskTests(dir, `mine-${short}-after`, options);
  if (!before.statuses || !after.statuses) return 'no per-test report';
  const lists = testLists(before.statuses, after.statuses, after.run?.timedOut ?? false);
  if (typeof lists === 'string') return lists;

  const [owner = 'local', name = 'repo'] = options.repoName.split('/');
  return {
    instance_id: `${owner}__${name}-${short}`,
    repo: options.repoName,
    base_commit: entry.parent,
    problem_statement: await problemStatement(entry.message, options.fetchIssue),
    test_patch: testPatch,
    FAIL_TO_PASS: lists.failToPass,
    PASS_TO_PASS: lists.passToPass,
    patch: goldPatch,
    hints_text: '',
    created_at: entry.date,
    mined_from_commit: entry.sha,
  };
}

/**
 * `FAIL_TO_PASS` (failing or missing before, passing after) and `PASS_TO_PASS` (passing on both),
 * sorted. A test that fails after the fix without having failed before too (a test of the change
 * that the fix does not make pass, or one the fix broke), or an after-run that timed out, drops the
 * commit; tests failing on both sides are left out of both lists.
 */
export function testLists(
  before: ReadonlyMap<string, TestStatus>,
  after: ReadonlyMap<string, TestStatus>,
  afterTimedOut = false,
): { failToPass: string[]; passToPass: string[] } | DropReason {
  const failToPass: string[] = [];
  const passToPass: string[] = [];
  for (const [id, status] of after) {
    const was = before.get(id);
    if (status === 'failed' && was !== 'failed') return 'tests fail after the fix';
    if (status !== 'passed') continue;
    if (was === 'passed') passToPass.push(id);
    else if (was === undefined || was === 'failed') failToPass.push(id);
  }
  if (afterTimedOut) return 'tests fail after the fix';
  if (failToPass.length === 0) return 'tests do not fail before the fix';
  return { failToPass: failToPass.sort(), passToPass: passToPass.sort() };
}

async function problemStatement(
  message: string,
  fetchIssue: ((issue: number) => Promise<string | null>) | undefined,
): Promise<string> {
  if (fetchIssue) {
    for (const issue of referencedIssues(message)) {
      const text = await fetchIssue(issue).catch(() => null);
      if (text?.trim()) return text.trim();
    }
  }
  return message;
}

/** The mine report for people: counts by reason, then one line per examined commit. */
export function formatMineReport(report: MineReport, out: string): string {
  const lines = [
    `${report.tasks.length} task${report.tasks.length === 1 ? '' : 's'} from ${report.commits.length} commit${report.commits.length === 1 ? '' : 's'} examined (first-parent history, newest first), written to ${out}`,
  ];
  const dropped = DROP_REASONS.filter((r) => report.counts[r] > 0);
  if (dropped.length > 0) {
    lines.push('', 'dropped:');
    for (const r of dropped) lines.push(`  ${String(report.counts[r]).padStart(4)}  ${r}`);
  }
  lines.push('', 'commits:');
  for (const c of report.commits) {
    const subject = c.subject.length > 60 ? `${c.subject.slice(0, 59)}…` : c.subject;
    lines.push(`  ${c.sha.slice(0, 12)}  ${(c.dropped ?? 'task').padEnd(33)}  ${subject}`);
  }
  return `${lines.join('\n')}\n`;
}
