import { z } from 'zod';
import type { GitHubClient } from '../pipeline/github-client.js';
import { evaluateReviewGate, renderGateOutput } from './review-gate.js';

/**
 * Name of the check run that blocks merging until a person has reviewed the bot's pull request.
 * Branch protection can require it ("Require status checks to pass": FrogNano human review).
 */
export const HUMAN_REVIEW_CHECK_NAME = 'FrogNano human review';

/** Where a check run lives and what it describes. */
export interface HumanReviewCheckTarget {
  owner: string;
  repo: string;
  /** Commit the check run is attached to: the pull request's head commit. */
  headSha: string;
  /** Pull request the check is about (`details_url`, and named in the text). */
  pullNumber: number;
  pullUrl: string;
  /** The job that made the commit (newest round): kept in the check's `external_id`, named in the summary. */
  jobId?: string;
  /**
   * Logins of the people who asked for the runs so far (the labeller, then each feedback author): kept
   * in `external_id`, which only this app can write, so the gate knows whose approval alone does not
   * count (`review.requireSecondPerson`).
   */
  requestedBy?: readonly string[];
  /**
   * `output.text`: the transcript of the rounds (transcript.ts, at most 65 535 characters), or
   * `null`/absent when there is none (a commit pushed by a person carries the previous one forward).
   */
  transcript?: string | null;
}

/** What this app keeps in a human review check run's `external_id`. */
export interface HumanReviewCheckRef {
  jobId: string | null;
  requestedBy: string[];
}

/** Most requesters kept in `external_id`, so it stays short (rounds are few). */
const MAX_REQUESTERS = 20;

const externalIdSchema = z.object({
  jobId: z.string().nullable().optional(),
  requestedBy: z.array(z.string()).max(100).optional(),
});

/** `external_id` of a human review check run: JSON `{"jobId":"…","requestedBy":["alice"]}`. */
export function formatCheckExternalId(ref: HumanReviewCheckRef): string {
  const requestedBy = [...new Set(ref.requestedBy)].slice(0, MAX_REQUESTERS);
  return JSON.stringify({ ...(ref.jobId ? { jobId: ref.jobId } : {}), requestedBy });
}

/**
 * Read an `external_id` written by {@link formatCheckExternalId}. Older check runs held the bare job
 * id: that is read as a job id with no known requesters.
 */
export function parseCheckExternalId(raw: string | null | undefined): HumanReviewCheckRef {
  if (!raw) return { jobId: null, requestedBy: [] };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { jobId: raw, requestedBy: [] };
  }
  const parsed = externalIdSchema.safeParse(json);
  if (!parsed.success) return { jobId: raw, requestedBy: [] };
  return { jobId: parsed.data.jobId ?? null, requestedBy: parsed.data.requestedBy ?? [] };
}

/**
 * Create the "FrogNano human review" check run on a head commit, completed with conclusion
 * `action_required` (no review counts on a new commit): GitHub shows it as needing action, and a
 * branch protection rule or ruleset that requires the check blocks merging until the gate
 * (review-handler.ts) turns it `success`. The summary says what it waits for; the text carries the
 * transcript. (Checks API: https://docs.github.com/en/rest/checks/runs#create-a-check-run —
 * `details_url` is given because `action_required` should point to where the action is taken.)
 *
 * The follow-up publisher calls this on its new commit with the previous requesters plus the
 * feedback's author, and `appendTranscriptRound(previous.text, newSection)` as the transcript.
 *
 * @returns the check run id.
 * @throws Octokit's RequestError when GitHub refuses (the pipeline classifies it).
 */
export async function createHumanReviewCheck(
  octokit: GitHubClient,
  target: HumanReviewCheckTarget,
): Promise<number> {
  const requestedBy = [...new Set(target.requestedBy ?? [])];
  const gate = evaluateReviewGate([], {
    headSha: target.headSha,
    requesters: requestedBy,
    requireSecondPerson: true,
    canWrite: () => undefined,
  });
  const output = renderGateOutput(gate, {
    headSha: target.headSha,
    pullNumber: target.pullNumber,
    jobId: target.jobId ?? null,
  });
  const { data } = await octokit.rest.checks.create({
    owner: target.owner,
    repo: target.repo,
    name: HUMAN_REVIEW_CHECK_NAME,
    head_sha: target.headSha,
    status: 'completed',
    conclusion: 'action_required',
    completed_at: new Date().toISOString(),
    details_url: target.pullUrl,
    external_id: formatCheckExternalId({ jobId: target.jobId ?? null, requestedBy }),
    output: { ...output, ...(target.transcript ? { text: target.transcript } : {}) },
  });
  return data.id;
}

/** A human review check run of this app as {@link findHumanReviewCheck} reads it. */
export interface HumanReviewCheck extends HumanReviewCheckRef {
  id: number;
  conclusion: string | null;
  output: { title: string | null; summary: string | null; text: string | null };
}

/**
 * Set a human review check run's conclusion and output (the gate's verdict). `text` is sent again
 * so the transcript stays.
 *
 * @throws Octokit's RequestError when GitHub refuses.
 */
export async function updateHumanReviewCheck(
  octokit: GitHubClient,
  target: { owner: string; repo: string; checkRunId: number },
  verdict: { conclusion: 'success' | 'action_required'; title: string; summary: string; text: string | null },
): Promise<void> {
  await octokit.rest.checks.update({
    owner: target.owner,
    repo: target.repo,
    check_run_id: target.checkRunId,
    status: 'completed',
    conclusion: verdict.conclusion,
    completed_at: new Date().toISOString(),
    output: {
      title: verdict.title,
      summary: verdict.summary,
      ...(verdict.text ? { text: verdict.text } : {}),
    },
  });
}

/**
 * The latest "FrogNano human review" check run on `sha` made by this app, or `null`. Check runs of
 * other apps with the same name are skipped: GitHub would not let this app update them anyway, and
 * a user cannot forge this app's. `requestedBy` unites the requesters of all of this app's human
 * review check runs on the commit (two can exist when a webhook and the publisher raced).
 *
 * @param appId this GitHub App's id, when known; without it the name alone decides.
 */
export async function findHumanReviewCheck(
  octokit: GitHubClient,
  where: { owner: string; repo: string; sha: string; appId?: number },
): Promise<HumanReviewCheck | null> {
  const { data } = await octokit.rest.checks.listForRef({
    owner: where.owner,
    repo: where.repo,
    ref: where.sha,
    check_name: HUMAN_REVIEW_CHECK_NAME,
    filter: 'all',
    per_page: 100,
    ...(where.appId !== undefined ? { app_id: where.appId } : {}),
  });
  const runs = data.check_runs
    .filter(
      (r) => r.name === HUMAN_REVIEW_CHECK_NAME && (where.appId === undefined || r.app?.id === where.appId),
    )
    .sort((a, b) => b.id - a.id);
  const run = runs[0];
  if (!run) return null;
  const ref = parseCheckExternalId(run.external_id);
  const requestedBy = [...new Set(runs.flatMap((r) => parseCheckExternalId(r.external_id).requestedBy))];
  return {
    id: run.id,
    conclusion: run.conclusion,
    jobId: ref.jobId,
    requestedBy,
    output: { title: run.output.title, summary: run.output.summary, text: run.output.text },
  };
}
