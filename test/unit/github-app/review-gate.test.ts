import { describe, expect, it } from 'vitest';
import {
  evaluateReviewGate,
  renderGateOutput,
  reviewersToCheck,
  type GateReview,
} from '../../../src/github-app/review-gate.js';

const HEAD = 'a'.repeat(40);
const OLD = 'b'.repeat(40);
const WRITERS = new Set(['alice', 'wendy', 'maya', 'ci[bot]']);

let nextId = 1;
function r(login: string, state: string, commit = HEAD, type = 'User'): GateReview {
  return {
    id: nextId++,
    user: { login, type },
    state,
    commit_id: commit,
    html_url: `https://ghe/r/${nextId}`,
  };
}

function gate(reviews: GateReview[], requireSecondPerson = true) {
  return evaluateReviewGate(reviews, {
    headSha: HEAD,
    requesters: ['alice'],
    requireSecondPerson,
    canWrite: (login) => WRITERS.has(login),
  });
}

describe('evaluateReviewGate', () => {
  it('waits for an approval by a second person when nobody reviewed', () => {
    expect(gate([])).toEqual({
      conclusion: 'action_required',
      approval: null,
      waitingFor: [{ kind: 'approval', excluding: ['alice'] }],
      notCounted: [],
    });
  });

  it("does not count the requester's approval alone, unless requireSecondPerson is off", () => {
    const reviews = [r('alice', 'APPROVED')];
    expect(gate(reviews)).toMatchObject({
      conclusion: 'action_required',
      notCounted: [{ login: 'alice', reason: 'requester' }],
    });
    expect(gate(reviews, false)).toMatchObject({ conclusion: 'success', approval: { login: 'alice' } });
  });

  it("counts a second writer's approval of the head commit", () => {
    const reviews = [r('alice', 'APPROVED'), r('wendy', 'APPROVED')];
    expect(gate(reviews)).toMatchObject({
      conclusion: 'success',
      approval: { login: 'wendy' },
      waitingFor: [],
    });
  });

  it('does not carry an approval of an older commit over', () => {
    expect(gate([r('wendy', 'APPROVED', OLD)])).toMatchObject({
      conclusion: 'action_required',
      notCounted: [{ login: 'wendy', reason: 'older_commit', commit: OLD }],
    });
  });

  it('takes each person’s latest say: a later comment keeps the approval, a later change request or dismissal ends it', () => {
    expect(gate([r('wendy', 'APPROVED'), r('wendy', 'COMMENTED')]).conclusion).toBe('success');
    expect(gate([r('wendy', 'APPROVED'), r('wendy', 'CHANGES_REQUESTED')]).conclusion).toBe(
      'action_required',
    );
    expect(gate([r('wendy', 'DISMISSED')])).toMatchObject({
      conclusion: 'action_required',
      notCounted: [{ login: 'wendy', reason: 'dismissed' }],
    });
  });

  it("blocks on another writer's change request on the head commit, not on an older one", () => {
    expect(gate([r('wendy', 'APPROVED'), r('maya', 'CHANGES_REQUESTED')])).toMatchObject({
      conclusion: 'action_required',
      approval: { login: 'wendy' },
      waitingFor: [{ kind: 'changes_requested', by: ['maya'] }],
    });
    expect(gate([r('maya', 'CHANGES_REQUESTED', OLD), r('wendy', 'APPROVED')]).conclusion).toBe('success');
  });

  it('ignores bots and people without write access', () => {
    expect(gate([r('ci[bot]', 'APPROVED', HEAD, 'Bot'), r('rita', 'APPROVED')])).toMatchObject({
      conclusion: 'action_required',
      notCounted: [
        { login: 'ci[bot]', reason: 'bot' },
        { login: 'rita', reason: 'no_write_access' },
      ],
    });
    // A read-only person's change request does not block either.
    expect(gate([r('wendy', 'APPROVED'), r('rita', 'CHANGES_REQUESTED')]).conclusion).toBe('success');
  });

  it('asks for the permissions of the people who approve or request changes on the head commit only', () => {
    const reviews = [
      r('wendy', 'APPROVED'),
      r('maya', 'CHANGES_REQUESTED'),
      r('rita', 'COMMENTED'),
      r('olga', 'APPROVED', OLD),
      r('ci[bot]', 'APPROVED', HEAD, 'Bot'),
      r('dan', 'APPROVED'),
      r('dan', 'DISMISSED'),
    ];
    expect(reviewersToCheck(reviews, HEAD)).toEqual(['wendy', 'maya']);
  });
});

describe('renderGateOutput', () => {
  it('says what it waits for and why reviews did not count', () => {
    const out = renderGateOutput(
      gate([r('alice', 'APPROVED'), r('wendy', 'APPROVED', OLD), r('maya', 'CHANGES_REQUESTED')]),
      { headSha: HEAD, pullNumber: 7, jobId: 'job-1' },
    );
    expect(out.title).toBe('Changes requested by @maya');
    expect(out.summary.split('\n')).toEqual([
      'This change was written by a machine. Merging waits for:',
      `- an approving review of commit \`${HEAD.slice(0, 12)}\` (the head of #7) by a person with write access, other than @alice (who asked for the run)`,
      '- @maya, who requested changes on this commit, to approve it (or the review to be dismissed)',
      '',
      `Not counted: @alice asked for the run, so a second person must approve (\`review.requireSecondPerson\`); @wendy approved an older commit (\`${OLD.slice(0, 12)}\`).`,
      '',
      'Review the diff line by line, run it if you can, and approve only what you would approve from a colleague. The bot never approves, marks ready or merges its own pull requests.',
      '',
      'Job `job-1`; its run record: `frognano-bot audit show job-1`.',
    ]);
  });

  it('names the approval that counts', () => {
    const g = gate([r('wendy', 'APPROVED')]);
    const out = renderGateOutput(g, { headSha: HEAD, pullNumber: 7, jobId: null });
    expect(out.title).toBe('Approved by @wendy');
    expect(out.summary).toContain(
      `@wendy, who has write access, approved commit \`${HEAD.slice(0, 12)}\` ([review](${g.approval?.htmlUrl})). A new commit needs a new approval.`,
    );
  });
});
