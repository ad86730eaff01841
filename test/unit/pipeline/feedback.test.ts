import { describe, expect, it } from 'vitest';
import { parseFeedbackItems, type FeedbackItem } from '../../../src/pipeline/feedback.js';

const item = (over: Partial<FeedbackItem>): FeedbackItem => ({
  kind: 'comment',
  author: 'alice',
  body: 'x',
  createdAt: '2026-12-01T10:00:00Z',
  ...over,
});

describe('parseFeedbackItems', () => {
  it('keeps valid items in order, drops and counts malformed ones', () => {
    const entries = [
      JSON.stringify(item({ body: 'first' })),
      'not json',
      JSON.stringify({ kind: 'vote', author: 'a', body: '', createdAt: '2026-12-01T10:00:00Z' }),
      JSON.stringify(item({ body: 'second', kind: 'review', reviewId: 3 })),
    ];
    const { items, invalid } = parseFeedbackItems(entries);
    expect(items.map((i) => i.body)).toEqual(['first', 'second']);
    expect(invalid).toBe(2);
  });

  it('keeps a comment that arrived twice (with its review and as its own event) once', () => {
    const inline = item({ kind: 'review-comment', commentId: 9, path: 'a.py', line: 2 });
    const { items } = parseFeedbackItems([JSON.stringify(inline), JSON.stringify(inline)]);
    expect(items).toEqual([inline]);
  });
});
