import { throwIfAborted } from '../app-error.js';
import { commitChanges, type GitIdentity } from '../git/commit-changes.js';
import type { GitHttpAuth } from '../git/clone-repository.js';
import { pushBranch } from '../git/push-branch.js';
import type { Logger } from '../observability/logger.js';
import type { Trajectory } from '../leaf/trajectory.js';
import type { GitHubClient } from './github-client.js';
import type { RunSummary } from './outcome.js';
import type { TestRun } from './run-tests.js';

/** Label put on every pull request the bot opens. */
export const NEEDS_REVIEW_LABEL = 'frognano:needs-human-review';

/** What the pull request body shows (rendered by `github-app/pull-request.ts`). */
export interface PullRequestBodyInput {
  issueNumber: number;
  /** Closing keyword (`Fixes`), from the policy. */
  fixesKeyword: string;
  /**
   * Whether the body links the issue with the closing keyword (default true). False when the tests
   * ran on base and head and show no fix: the body then refers to the issue without closing it, so
   * merging does not claim a fix the tests do not show.
   */
  closesIssue?: boolean;
  /** Steps, tokens, time, exit reason, final message (untrusted model output), diffstat. */
  summary: RunSummary;
  /** The test run on the patched tree; `null` when no test command was configured or found. */
  tests: TestRun | null;
  /** Login of the person who labelled the issue. */
  requester: string;
  /** Plain-text warnings shown at the top (e.g. failing tests); issue 6 adds tampering flags here. */
  warnings: string[];
  /** Extra sections after the standard ones (e.g. a base/head test table, best-of-N attempts). */
  sections: Array<{ title: string; markdown: string }>;
  /**
   * The rounds so far, oldest first: kept in a hidden marker in the body; shown as the "Rounds"
   * table once a follow-up round is among them.
   */
  rounds?: PullRequestRound[];
}

/** Characters of the one-line request kept per round ({@link PullRequestRound.asked}). */
export const MAX_ASKED_CHARS = 80;

/** The first non-blank line of `text`, spaces squeezed, cut to {@link MAX_ASKED_CHARS} with `…`. */
export function askedLine(text: string): string {
  const line = (text.split('\n').find((l) => l.trim() !== '') ?? '').trim().replace(/\s+/g, ' ');
  return line.length > MAX_ASKED_CHARS ? `${line.slice(0, MAX_ASKED_CHARS - 1)}…` : line;
}

/** One row of the pull request body's "Rounds" table (and of its hidden marker). */
export interface PullRequestRound {
  /** Shown round number: 1 is the labelled issue's run, 2 the first follow-up. */
  round: number;
  /** Logins of who asked for the round. */
  requestedBy: string[];
  /** What was asked, one line of at most ~80 characters (untrusted: escaped when shown). */
  asked: string;
  /** The round's commit, `null` when not known (a pull request older than the marker). */
  commit: string | null;
  /** Tests fixed / broken from base to the round's head; `null` when the tests were not compared. */
  fixed: number | null;
  broken: number | null;
  /** How the round ended, in the bot's words (e.g. `pushed`, `pushed; the tests fail`). */
  outcome: string;
}

/** Everything needed to open or update the draft pull request of one job. */
export interface PullRequestRequest {
  owner: string;
  repo: string;
  issueNumber: number;
  /** The issue's title: the pull request's title. */
  issueTitle: string;
  /** Branch pushed by the job (without `refs/heads/`). */
  head: string;
  /** The default branch. */
  base: string;
  /** The commit pushed: the check run goes on it. */
  headSha: string;
  /** Login to request a review from (the person who labelled the issue). */
  reviewer: string;
  /** Extra labels next to {@link NEEDS_REVIEW_LABEL} (e.g. `frognano:tests-modified`). */
  extraLabels: string[];
  body: PullRequestBodyInput;
  /** The published run's trajectory: its transcript goes into the human review check run's text. */
  trajectory?: Trajectory;
  /** The run's row of the "Rounds" marker (round 1), without the commit (it is `headSha`). */
  round?: Omit<PullRequestRound, 'commit'>;
}

/** The pull request a job opened or updated. */
export interface PublishedPullRequest {
  number: number;
  /** `html_url` of the pull request. */
  url: string;
  /** True when an open pull request for the branch existed and was updated instead of opened. */
  updated: boolean;
  /** Id of the "FrogNano human review" check run created on the head commit. */
  checkRunId: number;
  /** What did not work after the pull request existed (label, review request); shown in the comment. */
  warnings?: string[];
}

/**
 * Opens or updates the draft pull request, labels it, requests the review and creates the human
 * review check run. Implemented by `publishPullRequest` in `src/github-app/pull-request.ts`; passed
 * to the pipeline as a dependency because imports flow `github-app → pipeline`, never back.
 */
export type PublishPullRequest = (
  octokit: GitHubClient,
  request: PullRequestRequest,
  logger: Logger,
) => Promise<PublishedPullRequest>;

/** Options of {@link publishChange}. */
export interface PublishChangeOptions {
  /** The worker's clone with the patch staged (`git apply --index`). */
  dir: string;
  octokit: GitHubClient;
  publishPullRequest: PublishPullRequest;
  /** Returns a valid installation token (fetched at push time: the clone's token may have expired). */
  getInstallationToken: () => Promise<string>;
  /** `${protocol}://${host}` of the GitHub server. */
  gitBaseUrl: string;
  appIdentity: GitIdentity;
  /** The person who labelled the issue; `id` gives the `<id>+<login>@users.noreply.<host>` address. */
  coAuthor: { login: string; id?: number };
  /** Branch to push, e.g. `frognano/issue-12`. */
  branch: string;
  request: Omit<PullRequestRequest, 'head' | 'headSha'>;
  jobId: string;
  now: () => Date;
  signal: AbortSignal;
  logger: Logger;
}

/**
 * Publish a verified change: one commit authored by the app with a `Co-authored-by:` trailer for the
 * person who labelled the issue, pushed to the job's branch (never the default branch; an existing
 * branch only when the app made its tip), then the draft pull request through `publishPullRequest`.
 *
 * Cancellation is honoured up to the push; once the branch is pushed the pull request is completed,
 * so a cancelled job never leaves a pushed branch without its pull request and check run.
 *
 * @throws AppError `POLICY_REFUSED` (branch not the app's), `GITHUB_API_ERROR` (push failed),
 *   the signal's reason (`abortReason`: `CANCELLED`…); Octokit's RequestError from the pull request calls.
 */
export async function publishChange(options: PublishChangeOptions): Promise<PublishedPullRequest> {
  const { request, logger } = options;
  const host = new URL(options.gitBaseUrl).hostname;
  const message = buildCommitMessage({
    issueTitle: request.issueTitle,
    issueNumber: request.issueNumber,
    jobId: options.jobId,
    coAuthors: [{ login: options.coAuthor.login, email: noreplyEmail(options.coAuthor, host) }],
  });
  const sha = await commitChanges(options.dir, {
    author: options.appIdentity,
    message,
    date: options.now(),
    signal: options.signal,
  });
  throwIfAborted(options.signal);
  const auth: GitHttpAuth = { token: await options.getInstallationToken(), baseUrl: options.gitBaseUrl };
  const pushed = await pushBranch({
    dir: options.dir,
    branch: options.branch,
    defaultBranch: request.base,
    owner: options.appIdentity,
    auth,
    signal: options.signal,
  });
  logger.info({ branch: options.branch, sha, replaced: pushed.previousSha }, 'branch pushed');
  return options.publishPullRequest(
    options.octokit,
    { ...request, head: options.branch, headSha: sha },
    logger,
  );
}

/**
 * The commit message: the issue's title as subject (cut to 72 characters), a line saying what made
 * it (with `round`, the follow-up round on the pull request), and one `Co-authored-by:` trailer per
 * co-author (https://docs.github.com/en/pull-requests/committing-changes-to-your-project/creating-and-editing-commits/creating-a-commit-with-multiple-authors).
 */
export function buildCommitMessage(input: {
  issueTitle: string;
  issueNumber: number;
  jobId: string;
  coAuthors: ReadonlyArray<{ login: string; email: string }>;
  /** Shown round number (2 = first follow-up) and the pull request, for a follow-up round's commit. */
  round?: { number: number; pullNumber: number };
}): string {
  const flat = input.issueTitle.replace(/\s+/g, ' ').trim() || `Issue #${input.issueNumber}`;
  const subject = flat.length > 72 ? `${flat.slice(0, 71)}…` : flat;
  const made = input.round
    ? `round ${input.round.number} on pull request #${input.round.pullNumber}, issue #${input.issueNumber}`
    : `issue #${input.issueNumber}`;
  return [
    subject,
    '',
    `Machine-written by FrogNano for ${made} (job ${input.jobId}).`,
    'A person must review this change before it is merged.',
    '',
    ...input.coAuthors.map((c) => `Co-authored-by: ${c.login} <${c.email}>`),
    '',
  ].join('\n');
}

/**
 * A user's no-reply commit address on `host`: `<id>+<login>@users.noreply.<host>`, or the older
 * `<login>@users.noreply.<host>` when the id is unknown. GitHub links both to the account.
 *
 * @param host the server's host name; a `:port` suffix (as in GHE_HOST) is dropped, since an e-mail
 *   domain has none.
 */
export function noreplyEmail(user: { login: string; id?: number }, host: string): string {
  const domain = host.replace(/:\d+$/, '');
  return `${user.id !== undefined ? `${user.id}+` : ''}${user.login}@users.noreply.${domain}`;
}
