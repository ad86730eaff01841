import { describe, expect, it } from 'vitest';
import { evaluateFeedback, originalIssueOf, requestText } from '../../../src/github-app/pull-feedback.js';

const BOT = 'frognano-dev[bot]';
const repo = { repository: { name: 'calc', owner: { login: 'octo-org' } }, installation: { id: 1 } };
const person = { login: 'alice', type: 'User' };

function comment(body: string, extra: Record<string, unknown> = {}) {
  return {
    ...repo,
    action: 'created',
    issue: { number: 7, pull_request: { url: 'x' } },
    comment: { id: 55, body, created_at: '2026-12-01T10:00:00Z', user: person },
    sender: person,
    ...extra,
  };
}

describe('requestText', () => {
  it('takes the text after /frognano, in any case, and recognises stop', () => {
    expect(requestText('/frognano  use a loop\nplease', 'frognano-dev')).toEqual({
      text: 'use a loop\nplease',
      stop: false,
    });
    expect(requestText('/FrogNano stop', 'frognano-dev')).toEqual({ text: 'stop', stop: true });
    expect(requestText('/frognano stop using globals', 'frognano-dev')?.stop).toBe(false);
    expect(requestText('/frognano', 'frognano-dev')).toEqual({ text: '', stop: false });
  });

  it('needs the command first and a whole word; a mention of the app counts anywhere', () => {
    expect(requestText('see /frognano', 'frognano-dev')).toBeNull();
    expect(requestText('/frognanox do it', 'frognano-dev')).toBeNull();
    expect(requestText('hey @frognano-dev[bot] rename it', 'frognano-dev')?.text).toBe(
      'hey @frognano-dev[bot] rename it',
    );
    expect(requestText('@frognano-dev, rename it', 'frognano-dev')).not.toBeNull();
    expect(requestText('@frognano-devops rename it', 'frognano-dev')).toBeNull();
    expect(requestText('mail me at x@frognano-dev', 'frognano-dev')).toBeNull();
  });
});

describe('evaluateFeedback', () => {
  it('turns a /frognano pull request comment into a comment item', () => {
    expect(evaluateFeedback('issue_comment', comment('/frognano add a test'), BOT)).toEqual({
      action: 'request',
      pullNumber: 7,
      item: {
        kind: 'comment',
        author: 'alice',
        body: 'add a test',
        createdAt: '2026-12-01T10:00:00Z',
        commentId: 55,
      },
    });
  });

  it('ignores edits, bots (the app included), plain issues and other text', () => {
    expect(evaluateFeedback('issue_comment', comment('/frognano x', { action: 'edited' }), BOT).action).toBe(
      'ignore',
    );
    const own = { login: BOT, type: 'Bot' };
    expect(
      evaluateFeedback(
        'issue_comment',
        comment('/frognano x', {
          sender: own,
          comment: { id: 1, body: '/frognano x', created_at: 'x', user: own },
        }),
        BOT,
      ).action,
    ).toBe('ignore');
    expect(
      evaluateFeedback('issue_comment', comment('/frognano x', { issue: { number: 7 } }), BOT).action,
    ).toBe('ignore');
    expect(evaluateFeedback('issue_comment', comment('LGTM'), BOT).action).toBe('ignore');
  });

  it('keeps the place of an inline review comment', () => {
    const payload = {
      ...repo,
      action: 'created',
      pull_request: { number: 9 },
      sender: person,
      comment: {
        id: 77,
        body: '/frognano off by one',
        created_at: '2026-12-01T10:00:00Z',
        pull_request_review_id: 5,
        path: 'calc.py',
        start_line: 3,
        line: 4,
        diff_hunk: '@@ -1 +1 @@',
        user: person,
      },
    };
    expect(evaluateFeedback('pull_request_review_comment', payload, BOT)).toMatchObject({
      action: 'request',
      pullNumber: 9,
      item: {
        kind: 'review-comment',
        body: 'off by one',
        path: 'calc.py',
        startLine: 3,
        line: 4,
        reviewId: 5,
      },
    });
  });

  it('acts on a review only when it requests changes', () => {
    const review = (state: string) => ({
      ...repo,
      action: 'submitted',
      pull_request: { number: 9 },
      sender: person,
      review: { id: 5, state, body: 'Rename it.', submitted_at: '2026-12-01T10:00:00Z', user: person },
    });
    expect(evaluateFeedback('pull_request_review', review('changes_requested'), BOT)).toMatchObject({
      action: 'request',
      reviewId: 5,
      item: { kind: 'review', body: 'Rename it.', reviewId: 5 },
    });
    expect(evaluateFeedback('pull_request_review', review('approved'), BOT).action).toBe('ignore');
    expect(evaluateFeedback('pull_request_review', review('commented'), BOT).action).toBe('ignore');
  });
});

describe('originalIssueOf', () => {
  it('reads the head branch, else the closing keyword of the body', () => {
    expect(originalIssueOf({ head: { ref: 'frognano/issue-12' }, body: 'Fixes #3' })).toBe(12);
    expect(originalIssueOf({ head: { ref: 'frognano/other' }, body: 'This change.\n\nCloses #3' })).toBe(3);
    expect(originalIssueOf({ head: { ref: 'frognano/other' }, body: 'See #3' })).toBeNull();
  });
});
