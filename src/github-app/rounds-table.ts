import { z } from 'zod';
import type { Logger } from '../observability/logger.js';
import type { PullRequestRound } from '../pipeline/publish-change.js';
import { table, untrustedInline } from '../text/markdown.js';

/**
 * The rounds of a bot pull request in its body: a hidden marker holding every round's row as JSON
 * (`<!-- frognano:rounds [...] -->`), read back when the next round rewrites the body, and the
 * "Rounds" table people read. The marker is in a body people can edit, so it is validated with zod
 * and every text in it is escaped when shown.
 */
const MARKER_START = '<!-- frognano:rounds ';
const MARKER_END = ' -->';

const roundSchema = z.object({
  round: z.number().int().positive(),
  requestedBy: z.array(z.string().max(100)).max(50),
  asked: z.string().max(400),
  commit: z
    .string()
    .regex(/^[0-9a-f]{7,64}$/)
    .nullable(),
  fixed: z.number().int().nonnegative().nullable(),
  broken: z.number().int().nonnegative().nullable(),
  outcome: z.string().max(200),
});
const roundsSchema = z.array(roundSchema).max(100);

/**
 * The hidden marker of `rounds`: JSON in an HTML comment, with `<`, `>`, `&` and `--` written as
 * JSON escapes so no text in it can end the comment.
 */
export function renderRoundsMarker(rounds: readonly PullRequestRound[]): string {
  const json = JSON.stringify(rounds)
    .replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(/--/g, '-\\u002d');
  return `${MARKER_START}${json}${MARKER_END}`;
}

/**
 * The rounds kept in a pull request body's marker: `null` when the body has none; an empty list
 * (with a warning log) when the marker is not valid JSON of rounds, so the table starts fresh.
 */
export function readRoundsMarker(body: string | null, logger: Logger): PullRequestRound[] | null {
  const text = body ?? '';
  const start = text.indexOf(MARKER_START);
  if (start < 0) return null;
  const end = text.indexOf(MARKER_END, start + MARKER_START.length);
  const raw = end < 0 ? '' : text.slice(start + MARKER_START.length, end);
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    json = undefined;
  }
  const parsed = roundsSchema.safeParse(json);
  if (!parsed.success) {
    logger.warn(
      { chars: raw.length },
      'the rounds marker of the pull request body is corrupt; the table starts fresh',
    );
    return [];
  }
  return parsed.data;
}

/**
 * The "Rounds" table: round, requested by, what was asked (escaped), commit (short sha linked to
 * `<pullUrl>/commits/<sha>`), tests fixed / broken, outcome.
 */
export function renderRoundsTable(rounds: readonly PullRequestRound[], pullUrl: string): string {
  const rows = rounds.map((r) => [
    String(r.round),
    r.requestedBy.map((login) => `@${login.replace(/[^A-Za-z0-9[\]_-]/g, '')}`).join(', ') || '—',
    untrustedInline(r.asked, 100) || '—',
    r.commit ? `[\`${r.commit.slice(0, 7)}\`](${pullUrl}/commits/${r.commit})` : '—',
    r.fixed === null || r.broken === null ? '—' : `${r.fixed} / ${r.broken}`,
    untrustedInline(r.outcome, 200),
  ]);
  return table(
    ['Round', 'Requested by', 'What was asked', 'Commit', 'Tests fixed / broken', 'Outcome'],
    rows,
    'rlllrl',
  );
}
