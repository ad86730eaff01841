import { applyPatch } from '../../git/apply-patch.js';
import type { GitIdentity } from '../../git/commit-changes.js';
import type { GitHubClient } from '../github-client.js';
import type { JobRequest } from '../job-request.js';
import type { Outcome } from '../outcome.js';
import {
  askedLine,
  publishChange,
  type PublishPullRequest,
  type PullRequestBodyInput,
} from '../publish-change.js';
import type { PreparedJob } from '../sources/job-source.js';
import type { ChosenCandidate } from '../steps/choose-candidate.js';
import type { CandidateChoice } from '../verification/choose-candidate.js';
import type { GitHubIssueTarget } from '../sources/github-issue-source.js';
import { buildEvidence } from '../verification/evidence-markdown.js';
import type { JobPublisher } from './job-publisher.js';

/** What {@link createPullRequestPublisher} needs from the worker. */
export interface PullRequestPublisherOptions {
  /** Installation-authenticated client. */
  octokit: GitHubClient;
  /** `publishPullRequest` from `src/github-app/pull-request.ts` (possibly wrapped by the run recorder). */
  publishPullRequest: PublishPullRequest;
  /** A valid installation token, asked for again at push time (kept in memory, given to git's env). */
  getInstallationToken: () => Promise<string>;
  /** `${protocol}://${host}` of GitHub (Enterprise Server). */
  gitBaseUrl: string;
  /** Author of the bot's commits. */
  appIdentity: GitIdentity;
  /** The job's request: who labelled (co-author, reviewer). */
  request: JobRequest;
}

/**
 * The publisher of a labelled issue: the chosen patch as one commit by the app (co-authored by who
 * labelled), pushed to `<branchPrefix>issue-<n>`, a draft pull request with the evidence (base →
 * head table, tampering warning and label, the candidates), review request, human review check run.
 * A change whose tests count as failing ends as `tests_failing` without a pull request unless the
 * policy's `allowDraftOnFailingTests` says otherwise.
 */
export function createPullRequestPublisher(
  options: PullRequestPublisherOptions,
): JobPublisher<GitHubIssueTarget> {
  return {
    async publish(ctx, job, chosen, choice): Promise<Outcome> {
      const { policy, target } = job;
      const { verified, patch, summary, testsFailing } = chosen;
      if (testsFailing && !policy.allowDraftOnFailingTests) return { kind: 'tests_failing', patch, summary };
      ctx.signal.throwIfAborted();
      await ctx.progress({ stage: 'publishing' });
      await applyPatch(job.dir, patch, { signal: ctx.signal });
      const { evidence, body } = pullRequestBodyInput(job, chosen, choice, {
        issueNumber: target.issueNumber,
        requester: options.request.triggeredBy.login,
      });
      const { request } = options;
      const pr = await publishChange({
        ...options,
        dir: job.dir,
        coAuthor: request.triggeredBy,
        branch: `${policy.branchPrefix}issue-${target.issueNumber}`,
        jobId: ctx.jobId,
        now: ctx.now,
        signal: ctx.signal,
        logger: ctx.logger,
        request: {
          owner: target.owner,
          repo: target.repo,
          issueNumber: target.issueNumber,
          issueTitle: target.issueTitle,
          base: target.defaultBranch,
          reviewer: request.triggeredBy.login,
          extraLabels: evidence.labels,
          ...(chosen.state.trajectory ? { trajectory: chosen.state.trajectory } : {}),
          body,
          round: {
            round: 1,
            requestedBy: [request.triggeredBy.login],
            asked: askedLine(target.issueTitle),
            ...testCounts(verified),
            outcome: testsFailing ? 'opened the draft; the tests fail' : 'opened the draft pull request',
          },
        },
      });
      const warned = pr.warnings?.length ? { warnings: pr.warnings } : {};
      const opened = { pullNumber: pr.number, pullUrl: pr.url, summary, ...warned };
      if (testsFailing) return { kind: 'tests_failing', patch, ...opened };
      return { kind: 'pr_opened', updated: pr.updated, ...opened };
    },
  };
}

/**
 * The pull request body's input for the chosen candidate (the same evidence for a first run and a
 * follow-up round, whose patch is the whole change since the base): the base → head table, the
 * tampering warning, the candidates, a warning when the tests fail; plus the labels the evidence asks for.
 */
export function pullRequestBodyInput(
  job: PreparedJob<unknown>,
  chosen: ChosenCandidate,
  choice: CandidateChoice,
  who: { issueNumber: number; requester: string },
): { evidence: ReturnType<typeof buildEvidence>; body: PullRequestBodyInput } {
  const { verified, summary, testsFailing } = chosen;
  const tests = verified.tests;
  const evidence = buildEvidence({
    comparison: verified.comparison,
    base: verified.baseTests,
    head: tests,
    tampering: verified.tampering,
    choice: choice.rows.length > 1 ? choice : null,
  });
  const warnings = [...evidence.warnings];
  if (testsFailing && tests) {
    warnings.push(
      `The tests FAIL with this change (\`${tests.command}\`: ${tests.timedOut ? 'timed out' : `exit ${tests.exitCode}`}). ` +
        'It is published as a draft only because the repository allows drafts with failing tests.',
    );
  }
  return {
    evidence,
    body: {
      issueNumber: who.issueNumber,
      fixesKeyword: job.policy.fixesKeyword,
      closesIssue: !verified.comparison || verified.comparison.fixed.length > 0,
      summary,
      tests,
      requester: who.requester,
      warnings,
      sections: evidence.sections,
    },
  };
}

/** Tests fixed and broken from base to head, `null` when they were not compared. */
export function testCounts(verified: ChosenCandidate['verified']): {
  fixed: number | null;
  broken: number | null;
} {
  const c = verified.comparison;
  return c ? { fixed: c.fixed.length, broken: c.broken.length } : { fixed: null, broken: null };
}
