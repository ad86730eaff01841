import { z } from 'zod';

/**
 * Reviewer feedback on a pull request the app opened (issue 11): what a follow-up run is asked to
 * address. The intake (`src/github-app/pull-feedback.ts`) writes one item per request into the pull
 * request's pending list in Redis; the worker drains the list when a follow-up round starts and
 * hands the items to the pipeline in `JobRequest.followUp.feedback`.
 *
 * Every field comes from GitHub (a review, a comment), so it is untrusted text: validated with
 * {@link feedbackItemSchema} when read back from Redis, and never shown or sent without escaping.
 */
export const feedbackItemSchema = z.object({
  /**
   * `review`: a review submitted with `changes_requested` (its body); `review-comment`: an inline
   * comment on the diff (of such a review, or a `/frognano` comment in a review thread);
   * `comment`: a pull request conversation comment.
   */
  kind: z.enum(['review', 'review-comment', 'comment']),
  /** Login of who asked. */
  author: z.string().min(1),
  /** The request text; for a `/frognano …` comment, the text after the command (may be empty). */
  body: z.string(),
  /** ISO 8601 time the review or comment was made. */
  createdAt: z.string().datetime({ offset: true }),
  /** `html_url` of the review or comment. */
  url: z.string().optional(),
  /** Id of the comment (conversation or review comment), for replies. */
  commentId: z.number().int().positive().optional(),
  /** Id of the review (a `review`, or the review a `review-comment` belongs to). */
  reviewId: z.number().int().positive().optional(),
  /** File the inline comment is on (repository-relative). */
  path: z.string().optional(),
  /** First line of a multi-line inline comment (new side), 1-based. */
  startLine: z.number().int().positive().optional(),
  /** Line of the inline comment (last line of a range), 1-based. */
  line: z.number().int().positive().optional(),
  /** The diff hunk the inline comment is attached to (`diff_hunk`). */
  diffHunk: z.string().optional(),
});

/** One reviewer request; see {@link feedbackItemSchema}. */
export type FeedbackItem = z.infer<typeof feedbackItemSchema>;

/**
 * Parse feedback items stored as JSON strings (one per Redis list entry). Entries that are not
 * valid JSON or not a {@link FeedbackItem} are dropped and counted, so one corrupt entry does not
 * lose the rest. Items with the same `commentId` (a `/frognano` inline comment of a
 * `changes_requested` review arrives both with the review and as its own event) are kept once.
 */
export function parseFeedbackItems(entries: readonly string[]): { items: FeedbackItem[]; invalid: number } {
  const items: FeedbackItem[] = [];
  const seen = new Set<number>();
  let invalid = 0;
  for (const entry of entries) {
    let raw: unknown;
    try {
      raw = JSON.parse(entry);
    } catch {
      invalid++;
      continue;
    }
    const parsed = feedbackItemSchema.safeParse(raw);
    if (!parsed.success) {
      invalid++;
      continue;
    }
    const id = parsed.data.commentId;
    if (id !== undefined && parsed.data.kind !== 'review') {
      if (seen.has(id)) continue;
      seen.add(id);
    }
    items.push(parsed.data);
  }
  return { items, invalid };
}
