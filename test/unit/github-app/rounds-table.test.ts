import { describe, expect, it } from 'vitest';
import {
  readRoundsMarker,
  renderRoundsMarker,
  renderRoundsTable,
} from '../../../src/github-app/rounds-table.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { askedLine, type PullRequestRound } from '../../../src/pipeline/publish-change.js';

const ROW: PullRequestRound = {
  round: 2,
  requestedBy: ['bob'],
  asked: 'close the comment --> <b>x</b> & @carol #3',
  commit: 'a'.repeat(40),
  fixed: 1,
  broken: 0,
  outcome: 'pushed',
};

describe('rounds marker', () => {
  it('round-trips rows whose text would end an HTML comment, without ending it', () => {
    const marker = renderRoundsMarker([ROW]);
    expect(marker.slice(0, -4)).not.toContain('-->');
    expect(marker).not.toMatch(/<b>/);
    expect(readRoundsMarker(`text\n${marker}\nmore`, createSilentLogger())).toEqual([ROW]);
  });

  it('reads no marker as null and a corrupt one as a fresh start', () => {
    const logger = createSilentLogger();
    expect(readRoundsMarker('no marker here', logger)).toBeNull();
    expect(readRoundsMarker('<!-- frognano:rounds [{"round":"x"}] -->', logger)).toEqual([]);
    expect(readRoundsMarker('<!-- frognano:rounds not json -->', logger)).toEqual([]);
  });
});

describe('rounds table', () => {
  it('escapes what was asked and links the short commit', () => {
    const table = renderRoundsTable([ROW], 'https://ghe.example/o/r/pull/4');
    expect(table).toContain(
      '| Round | Requested by | What was asked | Commit | Tests fixed / broken | Outcome |',
    );
    expect(table).toContain(`[\`aaaaaaa\`](https://ghe.example/o/r/pull/4/commits/${'a'.repeat(40)})`);
    expect(table).toContain('&lt;b&gt;x&lt;/b&gt; &amp; @\u200bcarol #\u200b3');
  });

  it('asks in one line of at most 80 characters', () => {
    expect(askedLine('\n  first   line\nsecond')).toBe('first line');
    const long = askedLine('x'.repeat(200));
    expect(long).toHaveLength(80);
    expect(long.endsWith('…')).toBe(true);
  });
});
