import { AppError, httpStatusOf, isRetryableHttpStatus } from '../app-error.js';
import type { Logger } from '../observability/logger.js';
import type { GitHubClient } from '../pipeline/github-client.js';
import {
  NEEDS_REVIEW_LABEL,
  type PublishedPullRequest,
  type PullRequestBodyInput,
  type PullRequestRequest,
} from '../pipeline/publish-change.js';
import { describeExit } from '../pipeline/run-tests.js';
import { createHumanReviewCheck } from './check-run.js';
import { renderTranscriptRound } from './transcript.js';
import { fence, formatCount, formatDuration, quoteUntrusted, table } from '../text/markdown.js';
import { capStopLine, tokensText } from './status-comment.js';
import { renderRoundsMarker, renderRoundsTable } from './rounds-table.js';

/** GitHub refuses pull request bodies above 65 536 characters; stay well below. */
export const MAX_BODY_CHARS = 60_000;
/** Characters of the model's final message shown in the body. */
const MAX_FINAL_MESSAGE_CHARS = 8_000;
/** GitHub's limit on a pull request title, in characters. */
const MAX_TITLE_CHARS = 256;

/** Labels the bot creates when missing: name → colour and description. */
const LABEL_SPECS: Record<string, { color: string; description: string }> = {
  [NEEDS_REVIEW_LABEL]: {
    color: 'd93f0b',
    description: 'Written by FrogNano: a person must review it before merging',
  },
  'frognano:tests-modified': {
    color: 'fbca04',
    description: 'FrogNano changed or removed tests: check them closely',
  },
};

/**
 * Open the draft pull request of a job, or update the open one for the same branch (a second run for
 * the same issue), then: add {@link NEEDS_REVIEW_LABEL} (created when missing), request a review from
 * the person who labelled the issue, and create the "FrogNano human review" check run on the head
 * commit with conclusion `action_required`.
 *
 * The bot never marks the pull request ready, never approves and never merges it; an existing pull
 * request keeps its draft state as people left it. A failed review request (e.g. the person lost
 * access) is logged and does not fail the job: the check run still blocks merging.
 *
 * @throws Octokit's RequestError from the pull request, label or check run calls.
 */
export async function publishPullRequest(
  octokit: GitHubClient,
  request: PullRequestRequest,
  logger: Logger,
): Promise<PublishedPullRequest> {
  const { owner, repo } = request;
  const title = pullRequestTitle(request.issueTitle, request.issueNumber);
  const body = renderPullRequestBody({
    ...request.body,
    ...(request.round ? { rounds: [{ ...request.round, commit: request.headSha }] } : {}),
  });
  const { number, url, updated } = await openOrUpdate(octokit, request, title, body, logger);

  // From here on the pull request exists: an error says so (AppError details pullNumber, pullUrl).
  let checkRunId: number;
  try {
    // First, right after the pull request: the check run is what keeps it from being merged unreviewed.
    checkRunId = await createHumanReviewCheck(octokit, {
      owner,
      repo,
      headSha: request.headSha,
      pullNumber: number,
      pullUrl: url,
      jobId: request.body.summary.jobId,
      requestedBy: [request.body.requester],
      transcript: request.trajectory
        ? renderTranscriptRound(request.trajectory, {
            round: 1,
            note: `Asked for by @${request.body.requester}, who labelled issue #${request.issueNumber}.`,
          })
        : null,
    });
  } catch (err) {
    throw checkRunError(err, { number, url });
  }

  // Labels and the review request help people find the pull request; failing them is a warning.
  const warnings = await addPullLabels(
    octokit,
    { owner, repo, number },
    [NEEDS_REVIEW_LABEL, ...request.extraLabels],
    logger,
  );
  try {
    await octokit.rest.pulls.requestReviewers({
      owner,
      repo,
      pull_number: number,
      reviewers: [request.reviewer],
    });
  } catch (err) {
    warnings.push(`A review could not be requested from @${request.reviewer} (${describeHttpError(err)}).`);
    logger.warn(
      { err, reviewer: request.reviewer },
      'could not request a review; the human review check still blocks merging',
    );
  }
  return { number, url, updated, checkRunId, warnings };
}

/**
 * The error of a human review check run that could not be created on an existing pull request:
 * `GITHUB_API_ERROR` naming the pull request (the status comment links it).
 */
export function checkRunError(err: unknown, pull: { number: number; url: string }): AppError {
  const status = httpStatusOf(err);
  return new AppError(
    'GITHUB_API_ERROR',
    `the human review check run could not be created on the pull request${status ? ` (HTTP ${status})` : ''}: ${(err as Error).message}`,
    {
      retryable: isRetryableHttpStatus(status),
      cause: err,
      details: { ...(status ? { status } : {}), pullNumber: pull.number, pullUrl: pull.url },
    },
  );
}

/**
 * Add `labels` to a pull request (each created when missing). A failure is logged and returned as
 * the warning people see: labels help find the pull request, the check run is what blocks merging.
 */
export async function addPullLabels(
  octokit: GitHubClient,
  where: { owner: string; repo: string; number: number },
  labels: string[],
  logger: Logger,
): Promise<string[]> {
  const { owner, repo } = where;
  try {
    for (const name of labels) await ensureLabel(octokit, owner, repo, name);
    await octokit.rest.issues.addLabels({ owner, repo, issue_number: where.number, labels });
    return [];
  } catch (err) {
    logger.warn({ err, labels }, 'could not label the pull request');
    return [
      `The label${labels.length > 1 ? 's' : ''} ${labels.map((l) => `\`${l}\``).join(', ')} could not be added (${describeHttpError(err)}).`,
    ];
  }
}

/** `HTTP 404: Not Found` or the error's message. */
export function describeHttpError(err: unknown): string {
  const status = (err as { status?: number }).status;
  const message = (err as Error).message?.split('\n')[0] ?? String(err);
  return status ? `HTTP ${status}: ${message.slice(0, 200)}` : message.slice(0, 200);
}

/**
 * Update the open pull request of `request.head`, or open a draft one. A 422 on create ("A pull
 * request already exists": another run of this job got there first, e.g. a worker thought dead)
 * falls back to updating that one, so a job never opens a second pull request.
 */
async function openOrUpdate(
  octokit: GitHubClient,
  request: PullRequestRequest,
  title: string,
  body: string,
  logger: Logger,
): Promise<{ number: number; url: string; updated: boolean }> {
  const { owner, repo } = request;
  const findOpen = async (): Promise<number | undefined> => {
    const { data } = await octokit.rest.pulls.list({
      owner,
      repo,
      state: 'open',
      head: `${owner}:${request.head}`,
      per_page: 10,
    });
    return data.find((p) => p.head.ref === request.head)?.number;
  };
  let existing = await findOpen();
  if (existing === undefined) {
    try {
      const { data } = await octokit.rest.pulls.create({
        owner,
        repo,
        title,
        body,
        head: request.head,
        base: request.base,
        draft: true,
        maintainer_can_modify: true,
      });
      logger.info({ pullNumber: data.number }, 'opened a draft pull request');
      return { number: data.number, url: data.html_url, updated: false };
    } catch (err) {
      if ((err as { status?: number }).status !== 422) throw err;
      existing = await findOpen();
      if (existing === undefined) throw err;
    }
  }
  const { data } = await octokit.rest.pulls.update({ owner, repo, pull_number: existing, title, body });
  logger.info({ pullNumber: data.number }, 'updated the open pull request of the branch');
  return { number: data.number, url: data.html_url, updated: true };
}

/** The pull request title: the issue's title (one line, at most 256 characters). */
export function pullRequestTitle(issueTitle: string, issueNumber: number): string {
  const flat = issueTitle.replace(/\s+/g, ' ').trim() || `Fix issue #${issueNumber}`;
  return flat.length > MAX_TITLE_CHARS ? `${flat.slice(0, MAX_TITLE_CHARS - 1)}…` : flat;
}

/**
 * Create a label when the repository does not have it. A 422 from the create (someone made it in
 * between) is fine.
 */
async function ensureLabel(octokit: GitHubClient, owner: string, repo: string, name: string): Promise<void> {
  try {
    await octokit.rest.issues.getLabel({ owner, repo, name });
    return;
  } catch (err) {
    if ((err as { status?: number }).status !== 404) throw err;
  }
  const spec = LABEL_SPECS[name] ?? { color: 'ededed', description: 'Set by FrogNano' };
  try {
    await octokit.rest.issues.createLabel({ owner, repo, name, ...spec });
  } catch (err) {
    if ((err as { status?: number }).status !== 422) throw err;
  }
}

/**
 * The pull request body (GitHub-flavoured Markdown), in this order: the machine-written warning and
 * any other warnings; `<Keyword> #n` (or a non-closing reference when `closesIssue` is false); the
 * model's final message as quoted prose under a line marking it as model output (escaped by
 * `quoteUntrusted`: its mentions, references, closing keywords, links and HTML do nothing); the
 * diffstat; the test run on the patched tree (command, result, time, the tail of its output in a
 * collapsed `<details>` block); extra sections; the "Rounds" table once there are follow-up rounds
 * (and, first, the hidden marker of the rounds); a one-row table of exit reason, steps, tokens and
 * time; the job id.
 * Cut to {@link MAX_BODY_CHARS}.
 */
export function renderPullRequestBody(
  input: PullRequestBodyInput,
  context: { pullUrl?: string } = {},
): string {
  const s = input.summary;
  const out: string[] = [];
  const warnings = [
    'This pull request was written by a machine (the FrogNano-4B model in an offline sandbox). ' +
      'It may be wrong, incomplete or unsafe: review every line before merging. ' +
      'The "FrogNano human review" check stays unresolved until a person with write access approves it.',
    ...input.warnings,
  ];
  out.push(warnings.map((w) => `> [!WARNING]\n> ${w.replace(/\n/g, '\n> ')}`).join('\n\n'));
  out.push(
    input.closesIssue === false
      ? `Related to #${input.issueNumber}. The tests do not show that this change fixes it, so merging will not close the issue.`
      : `${input.fixesKeyword} #${input.issueNumber}`,
  );

  out.push('### What the model says');
  const final = (s.finalMessage ?? '').trim();
  if (final) {
    const shown =
      final.length > MAX_FINAL_MESSAGE_CHARS ? `${final.slice(0, MAX_FINAL_MESSAGE_CHARS)}\n[… cut]` : final;
    out.push(`Model output, not reviewed — the agent's final message:\n\n${quoteUntrusted(shown)}`);
  } else {
    out.push('_The model ended without a final message._');
  }

  out.push('### Change');
  out.push(s.diffstat ? fence(s.diffstat, '') : '_No diffstat._');

  out.push('### Tests');
  out.push(renderTests(input.tests));

  for (const section of input.sections) out.push(`### ${section.title}`, section.markdown);

  if (input.rounds?.some((r) => r.round > 1)) {
    out.push('### Rounds', renderRoundsTable(input.rounds, context.pullUrl ?? ''));
  }

  out.push('### Run');
  const stopped = capStopLine(s);
  if (stopped) out.push(`${stopped} The model may not have finished its work.`);
  out.push(
    table(
      ['Exit reason', 'Steps', 'Tokens', 'Time'],
      [
        [
          `\`${s.exitReason ?? 'unknown'}\``,
          `${formatCount(s.steps)} of ${formatCount(s.maxSteps)}`,
          tokensText(s),
          formatDuration(s.elapsedMs),
        ],
      ],
    ),
  );
  // The job id is long: in the table it squeezes the other columns.
  const jobId = s.jobId.replace(/`/g, '');
  out.push(
    `<sub>Job \`${jobId}\`; its run record: \`frognano-bot audit show ${jobId}\`. ` +
      `Opened by FrogNano for @${input.requester}, who labelled the issue. ` +
      'The bot never marks this pull request ready, approves it or merges it.</sub>',
  );
  const body = out.join('\n\n');
  // Last, after the cut, so cutting a long body never drops it.
  const marker = input.rounds?.length ? `\n\n${renderRoundsMarker(input.rounds)}` : '';
  const max = MAX_BODY_CHARS - marker.length;
  const shown =
    body.length > max ? `${body.slice(0, max)}\n\n[… the rest of this description was cut]` : body;
  return `${shown}${marker}`;
}

function renderTests(tests: PullRequestBodyInput['tests']): string {
  if (!tests) {
    return (
      'No test command found: the repository configures none (`testCommand` in `.github/frognano.yml`) and none ' +
      'was detected (pytest, npm test, go test, cargo test, make test). **The change was not tested.**'
    );
  }
  const result = tests.passed ? '**passed**' : `**failed** (${describeExit(tests.exitCode, tests.timedOut)})`;
  const lines = [
    `\`${tests.command}\` — ${result} in ${formatDuration(tests.durationMs)}, in a fresh sandbox on the patched tree ` +
      `(${tests.source === 'configured' ? 'command from the configuration' : `detected: ${tests.source}`}).`,
  ];
  if (tests.setup) {
    lines.push(
      `Setup: \`${tests.setup.command}\` — ${tests.setup.exitCode === 0 && !tests.setup.timedOut ? 'succeeded' : `failed (${describeExit(tests.setup.exitCode, tests.setup.timedOut)})`}.`,
    );
  }
  lines.push(
    `<details><summary>Last lines of the test output</summary>\n\n${fence(tests.outputTail)}\n\n</details>`,
  );
  return lines.join('\n\n');
}
