import { describe, expect, it } from 'vitest';
import { renderStatus } from '../../../src/github-app/status-comment.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';

const outcome: Outcome = { kind: 'llm_unreachable', message: 'connection refused' };

describe('status comment: the run record line', () => {
  it('names the command that prints a stored record', () => {
    const body = renderStatus({
      phase: 'finished',
      outcome: { ...outcome, record: { state: 'stored', jobId: 'o.r.1.d' } } as Outcome,
    });
    expect(body).toContain('Run record: `frognano-bot audit show o.r.1.d`');
  });

  it('says the record is pending when the store was down, and the outcome stays', () => {
    const body = renderStatus({
      phase: 'finished',
      outcome: { ...outcome, record: { state: 'pending', jobId: 'o.r.1.d' } } as Outcome,
    });
    expect(body).toContain('Run record: **pending** — the record store is unavailable');
    expect(body).toContain('connection refused');
  });

  it('says nothing about a record when the outcome carries none (a job the queue gave up on)', () => {
    expect(renderStatus({ phase: 'finished', outcome })).not.toContain('Run record');
  });
});
