import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { leftovers, startPipelineFixture, type PipelineFixture } from './pipeline-fixture.js';

let fx: PipelineFixture;
beforeAll(async () => {
  fx = await startPipelineFixture();
});
afterAll(async () => {
  await fx?.close();
});

/** How long after the abort a cancelled job may take to end (DESIGN.md, issue 9), ms. */
const CANCEL_BOUND_MS = 10_000;

describe('cancellation against a hostile sandbox', () => {
  it('ends the job within 10 s while a command ignores signals and an escaped process holds its output', async () => {
    const data = fx.openIssue('cancel a stubborn command', 'x');
    const controller = new AbortController();
    let abortedAt = 0;
    let armed = false;
    const script = [
      {
        kind: 'tool_calls' as const,
        calls: [
          {
            name: 'Bash',
            arguments: {
              command: 'trap "" TERM INT HUP; (setsid sleep 600 &); setsid sleep 600 & sleep 600',
            },
          },
        ],
      },
      { kind: 'final' as const, content: 'never reached' },
    ];
    const started = Date.now();
    const { outcome } = await fx.run(data, script, {
      signal: controller.signal,
      onProgress: (p) => {
        if (p.stage === 'running' && abortedAt === 0 && !armed) {
          armed = true;
          setTimeout(() => {
            abortedAt = Date.now();
            controller.abort(
              new AppError('CANCELLED', 'the frognano label was removed', { details: { by: 'carol' } }),
            );
          }, 1_500);
        }
      },
    });
    const ended = Date.now();
    expect(abortedAt).toBeGreaterThan(started);
    expect(ended - abortedAt).toBeLessThan(CANCEL_BOUND_MS);
    expect(outcome).toMatchObject({ kind: 'cancelled', by: 'carol' });
    expect(await leftovers(fx.sandboxRoot)).toEqual([]);
  });
});
