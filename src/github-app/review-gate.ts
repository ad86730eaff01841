import { z } from 'zod';

/**
 * The rule of the "FrogNano human review" check run, as a pure function of the pull request's
 * reviews (`GET /repos/{owner}/{repo}/pulls/{n}/reviews`,
 * https://docs.github.com/en/rest/pulls/reviews#list-reviews-for-a-pull-request): it is `success`
 * only when a person (not a bot) with write access approved the exact head commit, and — with
 * `review.requireSecondPerson` — that person is not one who asked for the run(s). Each user's latest
 * review that approves, requests changes or was dismissed is their say (comments do not change it,
 * as on GitHub); a dismissed review has state `DISMISSED` in the list.
 */

/** One review as the REST list returns it (only the fields read here; outside data, see {@link reviewListSchema}). */
export interface GateReview {
  id: number;
  user: { login: string; type?: string } | null;
  /** `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED`, `PENDING` (compared case-insensitively). */
  state: string;
  /** The commit the review was made on. */
  commit_id: string | null;
  html_url?: string | null;
  submitted_at?: string | null;
}

/** The REST list of reviews, checked at the boundary. */
export const reviewListSchema = z.array(
  z.object({
    id: z.number(),
    user: z.object({ login: z.string(), type: z.string().optional() }).nullable(),
    state: z.string(),
    commit_id: z.string().nullable(),
    html_url: z.string().nullable().optional(),
    submitted_at: z.string().nullable().optional(),
  }),
);

/** Inputs of {@link evaluateReviewGate} besides the reviews. */
export interface ReviewGateInput {
  /** The pull request's head commit now. */
  headSha: string;
  /** Logins of the people who asked for the runs (labeller, feedback authors). */
  requesters: readonly string[];
  /** `review.requireSecondPerson`: a requester's approval alone does not count. */
  requireSecondPerson: boolean;
  /**
   * Whether `login` has write, maintain or admin access (looked up through the API beforehand, for
   * the logins of {@link reviewersToCheck}). `undefined`: not known, counted as no.
   */
  canWrite: (login: string) => boolean | undefined;
}

/** Why a review did not count, for the check run's summary. */
export type NotCountedReason = 'bot' | 'dismissed' | 'older_commit' | 'no_write_access' | 'requester';

/** What the check is still waiting for (empty when it is `success`). */
export type GateWait =
  | {
      kind: 'approval';
      /** Logins whose approval does not count (the requesters, with `requireSecondPerson`). */
      excluding: string[];
    }
  | { kind: 'changes_requested'; by: string[] };

/** The gate's verdict. */
export interface ReviewGate {
  conclusion: 'success' | 'action_required';
  /** The approval that counts (the latest one, when several do). */
  approval: { login: string; reviewId: number; htmlUrl: string | null; submittedAt: string | null } | null;
  waitingFor: GateWait[];
  notCounted: Array<{ login: string; reason: NotCountedReason; commit: string | null }>;
}

const SAYING_STATES = new Set(['APPROVED', 'CHANGES_REQUESTED', 'DISMISSED']);

/** Each user's latest review that approves, requests changes or was dismissed (by review id order). */
function latestSayPerUser(reviews: readonly GateReview[]): GateReview[] {
  const latest = new Map<string, GateReview>();
  for (const r of [...reviews].sort((a, b) => a.id - b.id)) {
    if (!r.user || !SAYING_STATES.has(r.state.toUpperCase())) continue;
    latest.set(r.user.login.toLowerCase(), r);
  }
  return [...latest.values()];
}

function isBot(user: { login: string; type?: string }): boolean {
  return user.type === 'Bot' || user.login.endsWith('[bot]');
}

/**
 * Logins whose write access {@link evaluateReviewGate} needs: people whose latest say approves or
 * requests changes on the head commit.
 */
export function reviewersToCheck(reviews: readonly GateReview[], headSha: string): string[] {
  return latestSayPerUser(reviews)
    .filter(
      (r) => r.user && !isBot(r.user) && r.commit_id === headSha && r.state.toUpperCase() !== 'DISMISSED',
    )
    .map((r) => (r.user as { login: string }).login);
}

/**
 * Decide the check run from the reviews (pure). `success` iff some person's latest say is an
 * approval of `headSha`, by someone with write access who is not a bot and — with
 * `requireSecondPerson` — not a requester, and no person with write access has changes requested on
 * `headSha` as their latest say. Approvals of older commits do not carry over.
 */
export function evaluateReviewGate(reviews: readonly GateReview[], input: ReviewGateInput): ReviewGate {
  const requesters = new Set(input.requesters.map((r) => r.toLowerCase()));
  const notCounted: ReviewGate['notCounted'] = [];
  const approvals: GateReview[] = [];
  const blocking: string[] = [];
  for (const r of latestSayPerUser(reviews)) {
    const user = r.user as { login: string; type?: string };
    const state = r.state.toUpperCase();
    const skip = (reason: NotCountedReason) =>
      notCounted.push({ login: user.login, reason, commit: r.commit_id });
    if (isBot(user)) skip('bot');
    else if (state === 'DISMISSED') skip('dismissed');
    else if (r.commit_id !== input.headSha) {
      if (state === 'APPROVED') skip('older_commit');
    } else if (input.canWrite(user.login) !== true) skip('no_write_access');
    else if (state === 'CHANGES_REQUESTED') blocking.push(user.login);
    else if (input.requireSecondPerson && requesters.has(user.login.toLowerCase())) skip('requester');
    else approvals.push(r);
  }
  const waitingFor: GateWait[] = [];
  if (approvals.length === 0) {
    waitingFor.push({ kind: 'approval', excluding: input.requireSecondPerson ? [...input.requesters] : [] });
  }
  if (blocking.length > 0) waitingFor.push({ kind: 'changes_requested', by: blocking });
  const best = approvals.at(-1);
  return {
    conclusion: waitingFor.length === 0 ? 'success' : 'action_required',
    approval: best
      ? {
          login: (best.user as { login: string }).login,
          reviewId: best.id,
          htmlUrl: best.html_url ?? null,
          submittedAt: best.submitted_at ?? null,
        }
      : null,
    waitingFor,
    notCounted,
  };
}

/** What the summary needs besides the verdict. */
export interface GateOutputContext {
  headSha: string;
  pullNumber: number;
  /** The newest job, named with how to fetch its run record. */
  jobId: string | null;
}

const REASONS: Record<NotCountedReason, (commit: string) => string> = {
  bot: () => 'is a bot',
  dismissed: () => 'had the review dismissed',
  older_commit: (c) => `approved an older commit (\`${c}\`)`,
  no_write_access: () => 'has no write access',
  requester: () => 'asked for the run, so a second person must approve (`review.requireSecondPerson`)',
};

/** `@a`, `@a and @b`, `@a, @b and @c`. */
function mentions(logins: readonly string[]): string {
  const all = logins.map((l) => `@${l}`);
  return all.length <= 1 ? (all[0] ?? '') : `${all.slice(0, -1).join(', ')} and ${all.at(-1)}`;
}

/**
 * The check run's title and summary (Markdown) for a verdict: what it waits for, whose reviews did
 * not count and why, and what a reviewer should do.
 */
export function renderGateOutput(
  gate: ReviewGate,
  ctx: GateOutputContext,
): { title: string; summary: string } {
  const short = ctx.headSha.slice(0, 12);
  const lines: string[] = [];
  let title: string;
  if (gate.conclusion === 'success' && gate.approval) {
    const a = gate.approval;
    title = `Approved by @${a.login}`;
    lines.push(
      `@${a.login}, who has write access, approved commit \`${short}\`${a.htmlUrl ? ` ([review](${a.htmlUrl}))` : ''}. ` +
        'A new commit needs a new approval.',
    );
  } else {
    const changes = gate.waitingFor.find((w) => w.kind === 'changes_requested');
    title = changes ? `Changes requested by ${mentions(changes.by)}` : 'Waiting for a human review';
    lines.push(
      `This change was written by a machine. Merging waits for:`,
      ...gate.waitingFor.map((w) =>
        w.kind === 'approval'
          ? `- an approving review of commit \`${short}\` (the head of #${ctx.pullNumber}) by a person with write access` +
            (w.excluding.length > 0
              ? `, other than ${mentions(w.excluding)} (who asked for ${w.excluding.length === 1 ? 'the run' : 'the runs'})`
              : '')
          : `- ${mentions(w.by)}, who requested changes on this commit, to approve it (or the review to be dismissed)`,
      ),
    );
  }
  if (gate.notCounted.length > 0) {
    lines.push(
      '',
      'Not counted: ' +
        gate.notCounted
          .map((n) => `@${n.login} ${REASONS[n.reason](String(n.commit ?? 'unknown').slice(0, 12))}`)
          .join('; ') +
        '.',
    );
  }
  lines.push(
    '',
    'Review the diff line by line, run it if you can, and approve only what you would approve from a colleague. ' +
      'The bot never approves, marks ready or merges its own pull requests.',
  );
  if (ctx.jobId) {
    const id = ctx.jobId.replace(/`/g, '');
    lines.push('', `Job \`${id}\`; its run record: \`frognano-bot audit show ${id}\`.`);
  }
  return { title, summary: lines.join('\n') };
}
