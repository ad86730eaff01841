import { z } from 'zod';
import type { Clamp } from '../config/policy.js';
import type { Outcome, RunSummary } from '../pipeline/outcome.js';
import { recordNoteLine, recordNoteOf } from '../pipeline/record-note.js';
import type { Logger } from '../observability/logger.js';
import { createSilentLogger } from '../observability/logger.js';
import { describeExit } from '../pipeline/run-tests.js';
import { codeSpan, fence, formatCount, formatDuration, pluralize } from '../text/markdown.js';
import type { JobData } from '../queue/job-data.js';
import type { JobReport, JobReporterFactory } from '../queue/job-reporter.js';
import { httpStatusOf } from '../app-error.js';
import { githubError, type GitHubRequester } from './github-client.js';

/**
 * The status comment: one comment per issue, written by the app and edited in place as the job
 * moves on — queued (with position), running (step n of max), testing, then the outcome. It is
 * found again by the hidden marker {@link STATUS_MARKER} (or by the id stored in the job data), so
 * retries and later runs edit the same comment instead of adding comments.
 */
export const STATUS_MARKER = '<!-- frognano:status -->';

/**
 * The hidden marker of a pull request's status comment (follow-up rounds, issue 11): one per pull
 * request the app opened, never confused with the issue's ({@link STATUS_MARKER}).
 */
export const FOLLOW_UP_STATUS_MARKER = '<!-- frognano:follow-up-status -->';

/**
 * What the comment is about: the issue (label runs) or the app's pull request (follow-up rounds).
 * Decides the marker and how the comment says to cancel.
 */
export type StatusSubject = 'issue' | 'pull';

/** Hard cap of a comment body on GitHub is 65 536 characters; stay well below it. */
const MAX_BODY_CHARS = 60_000;
const MAX_PATCH_CHARS = 40_000;
const MAX_OUTPUT_TAIL_CHARS = 8_000;
/** Validation messages shown in a refusal, characters. */
const MAX_DETAILS_CHARS = 8_000;

/** Where the comment lives. */
export interface StatusCommentTarget {
  owner: string;
  repo: string;
  /** Issue number (a pull request's number for a follow-up's comment). */
  issue: number;
}

/**
 * A state the comment can show: what the worker reports ({@link JobReport}, defined by the queue),
 * plus what only `serve` shows.
 */
export type StatusState =
  | JobReport
  /** The label was seen but the job could not be queued (Redis down); nothing will run. */
  | { phase: 'not_queued'; reason: string };

/** The issue's status comment. */
export interface StatusComment {
  /** The comment id once known (given, found or created), else null. */
  readonly commentId: number | null;
  /**
   * Show `state`: edit the comment (found by id, else by marker) or create it. Calls are
   * serialised per instance, in call order.
   *
   * @returns the comment id.
   * @throws AppError `GITHUB_API_ERROR` when GitHub refuses or cannot be reached.
   */
  update(state: StatusState): Promise<number>;
}

/** Options of {@link createStatusComment}. */
export interface StatusCommentOptions {
  /** Id of the comment when already known (job data), so no search is needed. */
  commentId?: number;
  /**
   * The app's bot login (`<app-slug>[bot]`). When given, only comments by it count as ours; else
   * any comment by a Bot account with the marker does (a person's comment never does, even if it
   * contains the marker).
   */
  botLogin?: string;
  /** Job id shown in the footer (for admins and logs). */
  jobId?: string;
  /** Default `issue`. */
  subject?: StatusSubject;
  logger?: Logger;
}

const commentSchema = z.object({
  id: z.number(),
  body: z.string().nullish(),
  user: z.object({ login: z.string(), type: z.string().optional() }).nullish(),
});
const commentListSchema = z.array(commentSchema);

/**
 * The queue's job reporter as the issue's status comment: the worker calls it with the
 * installation client it obtained for the job; `bin` wires it. `botLogin` is read per job (the
 * app's login is resolved once the app is reachable), to recognise the app's own comment.
 */
export function statusCommentReporter(
  botLogin?: () => string | undefined,
): JobReporterFactory<GitHubRequester> {
  return (octokit, data: JobData, { jobId, logger }) =>
    createStatusComment(
      octokit,
      { owner: data.owner, repo: data.repo, issue: data.followUp?.pullNumber ?? data.issueNumber },
      {
        commentId: data.statusCommentId,
        botLogin: botLogin?.(),
        jobId,
        subject: data.followUp ? 'pull' : 'issue',
        logger,
      },
    );
}

/**
 * Create the status comment handle of an issue. Nothing is written until {@link StatusComment.update}.
 *
 * @param octokit an installation-authenticated client (needs `issues: write`).
 */
export function createStatusComment(
  octokit: GitHubRequester,
  target: StatusCommentTarget,
  options: StatusCommentOptions = {},
): StatusComment {
  const logger = options.logger ?? createSilentLogger();
  let commentId: number | null = options.commentId ?? null;
  let chain: Promise<unknown> = Promise.resolve();
  const { owner, repo, issue } = target;
  const subject = options.subject ?? 'issue';
  const marker = subject === 'pull' ? FOLLOW_UP_STATUS_MARKER : STATUS_MARKER;

  const isOurs = (c: z.infer<typeof commentSchema>) =>
    (c.body ?? '').includes(marker) &&
    (options.botLogin ? c.user?.login === options.botLogin : c.user?.type === 'Bot');

  async function find(): Promise<number | null> {
    // Newest page last; the status comment is usually early in the thread. Bounded: 30 pages.
    for (let page = 1; page <= 30; page++) {
      const res = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        owner,
        repo,
        issue_number: issue,
        per_page: 100,
        page,
      });
      const comments = commentListSchema.parse(res.data);
      const ours = comments.find(isOurs);
      if (ours) return ours.id;
      if (comments.length < 100) return null;
    }
    return null;
  }

  async function write(body: string): Promise<number> {
    if (commentId !== null) {
      try {
        await octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
          owner,
          repo,
          comment_id: commentId,
          body,
        });
        return commentId;
      } catch (err) {
        // Deleted by someone: find another one of ours, else create a new one.
        if (httpStatusOf(err) !== 404) throw githubError(err, 'edit the status comment');
        logger.info({ commentId }, 'status comment was deleted; writing a new one');
        commentId = null;
      }
    }
    try {
      const found = await find();
      if (found !== null) {
        commentId = found;
        await octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
          owner,
          repo,
          comment_id: found,
          body,
        });
        return found;
      }
      const res = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        owner,
        repo,
        issue_number: issue,
        body,
      });
      commentId = commentSchema.parse(res.data).id;
      return commentId;
    } catch (err) {
      throw githubError(err, 'write the status comment');
    }
  }

  return {
    get commentId() {
      return commentId;
    },
    update(state) {
      const body = renderStatus(state, { jobId: options.jobId, subject });
      const next = chain.then(
        () => write(body),
        () => write(body),
      );
      chain = next.catch(() => undefined);
      return next;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Rendering

/**
 * The comment body for `state`, starting with {@link STATUS_MARKER} (with `subject: 'pull'`,
 * {@link FOLLOW_UP_STATUS_MARKER}). Untrusted text (error messages, test output, the patch) is
 * escaped or fenced; `@mentions` in it are defused so the comment never pings people named by
 * model output or error text.
 */
export function renderStatus(
  state: StatusState,
  context: { jobId?: string; subject?: StatusSubject } = {},
): string {
  const pull = context.subject === 'pull';
  const lines = [pull ? FOLLOW_UP_STATUS_MARKER : STATUS_MARKER, `**🐸 FrogNano** — ${headline(state)}`, ''];
  let shown = details(state);
  if (pull) {
    shown = shown.map((l) =>
      l.replaceAll(ISSUE_CANCEL_HINT, PULL_CANCEL_HINT).replaceAll(ISSUE_RESTART_HINT, PULL_RESTART_HINT),
    );
  }
  lines.push(...shown);
  if (context.jobId) lines.push('', `<sub>job \`${context.jobId.replace(/`/g, '')}\`</sub>`);
  let body = lines.join('\n').replace(/\n{3,}/g, '\n\n');
  if (body.length > MAX_BODY_CHARS) body = `${body.slice(0, MAX_BODY_CHARS)}\n\n…(cut to fit a comment)`;
  return body;
}

const ISSUE_CANCEL_HINT = 'Remove the label or close the issue to cancel.';
const PULL_CANCEL_HINT = 'Comment `/frognano stop` or close the pull request to cancel.';
const ISSUE_RESTART_HINT = 'Add the label again to start a new run.';
const PULL_RESTART_HINT = 'Comment `/frognano` and what to change to start a new round.';

function headline(state: StatusState): string {
  switch (state.phase) {
    case 'queued':
      if (state.again) return 'queued again';
      return state.position === null ? 'queued' : `queued (position ${state.position})`;
    case 'preparing':
      return 'preparing (cloning the repository, starting the sandbox)';
    case 'running':
      return state.maxSteps === null
        ? `running (step ${state.step})`
        : `running (step ${state.step} of ${state.maxSteps})`;
    case 'testing':
      return 'testing the change';
    case 'publishing':
      return 'pushing the branch and opening the pull request';
    case 'retrying':
      return `hit a temporary problem; will try again (retry ${state.retry} of ${state.maxRetries})`;
    case 'not_queued':
      return 'could not be queued';
    case 'finished':
      return outcomeHeadline(state.outcome);
  }
}

function details(state: StatusState): string[] {
  switch (state.phase) {
    case 'queued':
      if (state.again) {
        return [
          `${untrusted(state.again)}; the job is back in the queue and starts over on the next free worker.`,
          ISSUE_CANCEL_HINT,
        ];
      }
      return [
        state.triggeredBy ? `Started by @${state.triggeredBy}. ` : '',
        `This comment is updated as the job goes on. ${ISSUE_CANCEL_HINT}`,
      ];
    case 'preparing':
    case 'running':
    case 'publishing':
      return [ISSUE_CANCEL_HINT];
    case 'testing':
      return [
        state.command ? `Running \`${inlineCode(state.command)}\`.` : 'Running the tests.',
        ISSUE_CANCEL_HINT,
      ];
    case 'retrying':
      return [`Reason: ${untrusted(state.reason)}`];
    case 'not_queued':
      return [
        `Reason: ${untrusted(state.reason)}`,
        '',
        'Nothing will run for this labelling. Remove the label and add it again to retry once the service is back.',
      ];
    case 'finished': {
      const record = recordNoteOf(state.outcome);
      return [...outcomeDetails(state.outcome), ...(record ? ['', recordNoteLine(record)] : [])];
    }
  }
}

/** One line saying how the job ended. */
export function outcomeHeadline(outcome: Outcome): string {
  switch (outcome.kind) {
    case 'pr_opened':
      return `${outcome.updated ? 'updated' : 'opened'} draft pull request #${outcome.pullNumber}`;
    case 'patch_ready':
      return outcome.flagged ? 'made a change that modifies tests (flagged)' : 'made a change';
    case 'no_change':
      return outcome.summary.exitReason === 'max_tokens_per_turn'
        ? 'stopped: a model turn hit the per-turn token cap'
        : 'finished without changing any file';
    case 'tests_failing':
      return outcome.pullNumber !== undefined
        ? `opened draft pull request #${outcome.pullNumber}, but the tests fail`
        : 'made a change, but the tests still fail — no pull request opened';
    case 'llm_unreachable':
      return outcome.status
        ? `stopped: the model server failed (HTTP ${outcome.status})`
        : 'stopped: the model server could not be reached';
    case 'sandbox_failed':
      return outcome.cause === 'protocol'
        ? 'stopped: the sandbox broke its protocol'
        : 'stopped: the sandbox failed';
    case 'timed_out':
      return 'stopped: time limit reached';
    case 'cancelled':
      return outcome.by ? `cancelled by @${outcome.by}` : 'cancelled';
    case 'refused':
      if (outcome.stage === 'branch') return `nothing pushed: ${outcome.reason}`;
      return outcome.stage === 'patch' ? 'change refused — no pull request opened' : 'not run';
    case 'github_error':
      return outcome.pullRequest
        ? `opened draft pull request #${outcome.pullRequest.number}, then a GitHub API call failed`
        : 'stopped: a GitHub API call failed';
    case 'failed':
      return 'failed';
  }
}

/** The body lines for an outcome: what happened, then what a person can do next. */
export function outcomeDetails(outcome: Outcome): string[] {
  const summary = 'summary' in outcome ? outcome.summary : undefined;
  const out: string[] = [];
  switch (outcome.kind) {
    case 'patch_ready':
      // Only `frognano-bot run` (an output folder) ends so; a GitHub job has a pull request instead.
      out.push(`The change was written to \`${outcome.folder}\`.`);
      out.push(...testsLines(summary));
      break;
    case 'pr_opened':
      out.push(
        `${outcome.updated ? 'Updated' : 'Opened'} [#${outcome.pullNumber}](${outcome.pullUrl}) as a **draft**. ` +
          'The change is machine-written: read it and run it before approving. It cannot be merged until ' +
          'a person with write access approves it.',
      );
      out.push(...testsLines(summary));
      out.push(...warningLines(outcome.warnings));
      break;
    case 'no_change':
      out.push(
        summary?.exitReason === 'max_turns'
          ? `The model used all ${summary.maxSteps} steps without producing a change.`
          : summary?.exitReason === 'max_tokens_per_turn'
            ? 'A model turn reached the per-turn token cap (`maxTokensPerTurn`, the request\u2019s ' +
              '`max_completion_tokens`; the server ended it with `finish_reason: length`) before any file ' +
              'was changed. An administrator can raise `maxTokensPerTurn` for this repository.'
            : 'The model finished without changing any file, so there is nothing to review.',
        '',
        'What you can do: add detail to the issue — where the problem is, how to reproduce it, what ' +
          'you expect — then remove the label and add it again.',
      );
      break;
    case 'tests_failing':
      if (outcome.pullNumber !== undefined && outcome.pullUrl) {
        out.push(
          `Opened [#${outcome.pullNumber}](${outcome.pullUrl}) as a draft because the policy allows it, but ` +
            'the tests fail on the patched code. Treat it as a starting point, not a fix.',
        );
      } else {
        out.push(
          'The model changed the code, but the tests still fail on the patched tree, so no pull request ' +
            'was opened. The patch is below if it helps as a starting point.',
        );
      }
      out.push(...testsLines(summary));
      out.push(...warningLines(outcome.warnings));
      if (outcome.pullNumber === undefined && outcome.patch)
        out.push('', ...collapsed('Patch', outcome.patch, 'diff', MAX_PATCH_CHARS));
      out.push(
        '',
        'What you can do: add detail or hints to the issue and label it again, or take the patch from here.',
      );
      break;
    case 'llm_unreachable':
      out.push(
        outcome.status
          ? `The model server answered HTTP ${outcome.status} on every try: ${untrusted(outcome.message)}`
          : `The model server did not answer, even after retries: ${untrusted(outcome.message)}`,
        '',
        'Nothing was pushed. This is a service problem, not a problem with the issue: ask an administrator ' +
          'to check the model server, then remove the label and add it again.',
      );
      break;
    case 'sandbox_failed':
      if (outcome.cause === 'protocol') {
        out.push(
          `A command in the sandbox interfered with the sandbox\u2019s own channel to the worker: ${untrusted(outcome.message)}`,
          '',
          'The sandbox was destroyed and nothing it reported was used; nothing was pushed. The commands ' +
            'came from the model or from the repository\u2019s own code (tests, setup), so this is not a ' +
            'service outage: an administrator can read the worker logs under the job id below before ' +
            'anyone runs this again.',
        );
        break;
      }
      out.push(
        `The sandbox that runs the model\u2019s commands failed: ${untrusted(outcome.message)}`,
        '',
        'Nothing was pushed. This is a service problem, not a problem with the issue: an administrator can ' +
          'find the details in the worker logs under the job id below. Remove the label and add it again to retry.',
      );
      break;
    case 'timed_out':
      out.push(
        `The job reached its time limit: ${untrusted(outcome.message)}`,
        '',
        'Nothing was pushed. A narrower issue (one bug, with the file or function named) usually fits; ' +
          'an administrator can also raise the limit for this repository.',
      );
      break;
    case 'cancelled':
      out.push(
        `${outcome.by ? `@${outcome.by} cancelled the job` : 'The job was cancelled'}: ${untrusted(outcome.reason)}. Nothing was pushed.`,
        '',
        ISSUE_RESTART_HINT,
      );
      break;
    case 'refused':
      if (outcome.stage === 'branch') {
        out.push(
          `Nothing was pushed: ${untrusted(outcome.reason)}.`,
          '',
          'Someone pushed to the branch after this round started, so its change was made on an older ' +
            'head; the new commits were left as they are. ' +
            ISSUE_RESTART_HINT,
        );
        break;
      }
      if (outcome.stage === 'patch') {
        out.push(`The model made a change, but FrogNano refused it: ${untrusted(outcome.reason)}`);
        if (outcome.details?.length) out.push('', ...outcome.details.map((d) => `- ${untrusted(d)}`));
        out.push(
          '',
          'Nothing was pushed. If the change is needed, a person has to make it; otherwise add detail to the ' +
            'issue (what to change, what not to touch), then remove the label and add it again.',
        );
        break;
      }
      out.push(`FrogNano did not run: ${untrusted(outcome.reason)}`);
      // Validation messages (file, key path, problem) read best verbatim, in a code block.
      if (outcome.details?.length) out.push('', ...codeBlock(outcome.details.join('\n'), MAX_DETAILS_CHARS));
      out.push(
        '',
        'Nothing was changed. Fix the cause above (or ask an administrator), then label the issue again.',
      );
      break;
    case 'github_error':
      if (outcome.pullRequest) {
        out.push(
          `The draft pull request [#${outcome.pullRequest.number}](${outcome.pullRequest.url}) was opened, ` +
            'but a later step failed. Review it as usual; what is missing is below.',
          '',
        );
      }
      out.push(
        `GitHub answered with an error${outcome.status ? ` (HTTP ${outcome.status})` : ''}: ${untrusted(outcome.message)}`,
        '',
        outcome.retryable
          ? 'This is usually temporary. Remove the label and add it again to retry.'
          : 'Retrying will likely fail the same way: check the app\u2019s permissions on this repository ' +
              '(contents, pull requests, issues, checks: write) or ask an administrator.',
      );
      break;
    case 'failed':
      out.push(
        `The job failed unexpectedly (\`${inlineCode(outcome.code)}\`): ${untrusted(outcome.message)}`,
        '',
        'Nothing was pushed. An administrator can find the details in the worker logs under the job id ' +
          'below. Remove the label and add it again to retry.',
      );
      break;
  }
  if (summary) out.push(...limitLines(summary), '', summaryLine(summary));
  return out;
}

/** Steps after the pull request that did not work (label, review request), as comment lines. */
function warningLines(warnings: string[] | undefined): string[] {
  if (!warnings?.length) return [];
  return ['', 'Warnings:', ...warnings.map((w) => `- ⚠️ ${untrusted(w)}`)];
}

/** The cap that stopped the loop and the clamped repository values, as comment lines (may be empty). */
function limitLines(s: RunSummary): string[] {
  const out: string[] = [];
  const stop = capStopLine(s);
  if (stop) out.push('', stop);
  if (s.clamps?.length) {
    out.push('', 'Lowered to the admin caps:', ...s.clamps.map((c) => `- ${describeClamp(c)}`));
  }
  return out;
}

/**
 * The sentence naming the cap that stopped the agent loop and where its value came from, e.g.
 * ``The agent stopped at the step cap: maxSteps 3 (admin policy rule `octo-org/*`).``; null when the
 * loop did not stop at the step cap (`max_turns`) or the time cap (`max_time`). Also used in the
 * pull request body.
 */
export function capStopLine(s: RunSummary): string | null {
  const described = (cap: { value: number; source: string } | undefined): string =>
    cap ? ` ${cap.value} (${describePolicySource(cap.source)})` : '';
  if (s.exitReason === 'max_turns') {
    // Without `caps` (a summary made outside the policy path) the value is known, its source is not.
    return `The agent stopped at the step cap: maxSteps${described(s.caps?.maxSteps) || ` ${s.maxSteps}`}.`;
  }
  if (s.exitReason === 'max_time')
    return `The agent stopped at the time cap: maxTimeSec${described(s.caps?.maxTimeSec)}.`;
  return null;
}

/**
 * A clamp in words, e.g. ``maxSteps`: 150 instead of the 300 `.github/frognano.yml` asks for
 * (capped by the admin policy defaults).``
 */
export function describeClamp(c: Clamp): string {
  const asker = c.source.endsWith('.github/frognano.yml')
    ? codeSpan(c.source)
    : describePolicySource(c.source);
  return (
    `${codeSpan(c.key)}: ${formatCount(c.applied)} instead of the ${formatCount(c.requested)} ${asker} asks for ` +
    `(capped by the ${describePolicySource(c.capSource)}).`
  );
}

/**
 * Who set a policy value, in words, from an `EffectivePolicy.sources` value (config/policy.ts):
 * `policy:rule[0] (octo-org/*)` → ``admin policy rule `octo-org/*` ``, `policy:defaults` →
 * `admin policy defaults`, `default` → `built-in default`, `org` / `repo` → the
 * `.github/frognano.yml` of the organisation / repository. Anything else is shown as code.
 */
export function describePolicySource(source: string): string {
  const rule = /^policy:rule\[\d+\] \((.*)\)$/.exec(source);
  if (rule) return `admin policy rule \`${inlineCode(rule[1] ?? '')}\``;
  switch (source) {
    case 'policy:defaults':
      return 'admin policy defaults';
    case 'default':
      return 'built-in default';
    case 'org':
      return 'the organisation\u2019s `.github/frognano.yml`';
    case 'repo':
      return 'the repository\u2019s `.github/frognano.yml`';
    default:
      return `\`${inlineCode(source)}\``;
  }
}

function testsLines(summary: RunSummary | undefined): string[] {
  const t = summary?.tests;
  if (!t) return [];
  const result = t.timedOut
    ? 'timed out'
    : t.passed
      ? 'passed'
      : `failed (${describeExit(t.exitCode, false)})`;
  const lines = ['', `Tests: \`${inlineCode(t.command)}\` — ${result}.`];
  if (t.verdict) lines.push('', untrusted(t.verdict));
  if (!t.passed && t.outputTail)
    lines.push('', ...collapsed('Test output (end)', t.outputTail, 'text', MAX_OUTPUT_TAIL_CHARS));
  return lines;
}

function summaryLine(s: RunSummary): string {
  const parts = [
    `steps: ${formatCount(s.steps)} of ${formatCount(s.maxSteps)}`,
    `tokens: ${tokensText(s)}`,
    `time: ${formatDuration(s.elapsedMs)}`,
  ];
  if (s.exitReason) parts.push(`exit reason: \`${s.exitReason}\``);
  return `<sub>${parts.join(' · ')}</sub>`;
}

/** `1,200 prompt + 80 completion` (also the pull request body's wording). */
export function tokensText(s: Pick<RunSummary, 'promptTokens' | 'completionTokens'>): string {
  return `${formatCount(s.promptTokens)} prompt + ${formatCount(s.completionTokens)} completion`;
}

/** A fenced code block (plain text) that `text` cannot close, cut to its first `max` chars. */
function codeBlock(text: string, max: number): string[] {
  const shown = text.length > max ? `${text.slice(0, max)}\n…(cut)` : text;
  return [fence(shown.replace(/\n+$/, ''))];
}

/**
 * A collapsed `<details>` block with `text` in a fenced code block, cut to its last `max` chars for
 * output and its first `max` chars for a patch.
 */
function collapsed(title: string, text: string, lang: string, max: number): string[] {
  let shown = text;
  let note = '';
  if (text.length > max) {
    shown = lang === 'diff' ? text.slice(0, max) : text.slice(text.length - max);
    note = ` — ${lang === 'diff' ? 'first' : 'last'} ${formatCount(max)} of ${pluralize(text.length, 'character')}`;
  }
  return [
    `<details><summary>${title}${note}</summary>`,
    '',
    fence(shown.replace(/\n+$/, ''), lang),
    '',
    '</details>',
  ];
}

/** Escape untrusted text for Markdown/HTML and defuse @mentions and #references. */
export function untrusted(text: string): string {
  return text
    .slice(0, 2000)
    .replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c] ?? c)
    .replace(/@(?=[A-Za-z0-9])/g, '@\u200b')
    .replace(/\r?\n/g, ' ');
}

/** The inside of a code span (see `codeSpan` in text/markdown.ts). */
function inlineCode(text: string): string {
  return codeSpan(text).slice(1, -1);
}
