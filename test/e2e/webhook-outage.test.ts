/**
 * End to end (issue 12 item 4): GitHub is down when the label event arrives. The webhook is
 * answered at once (recorded in Redis, no GitHub call on that path); the GitHub side is queued and
 * retried with backoff; once GitHub is back the job runs: one status comment, one pull request,
 * nothing lost. The outage is 12 s here instead of a minute: INTAKE_BACKOFF_MS is shortened so the
 * retries keep pace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUS_MARKER } from '../../src/github-app/status-comment.js';
import { startE2eStack, type E2eStack } from '../helpers/e2e-stack.js';
import type { RecordedRequest, ScriptedTurn } from '../helpers/scripted-model-server.js';
import { waitFor } from '../integration/queue/redis-helper.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const OUTAGE_MS = 12_000;

function turnFor(request: RecordedRequest): ScriptedTurn {
  const done = (request.body.messages as Array<{ role: string }>).filter(
    (m) => m.role === 'assistant',
  ).length;
  if (done === 0) {
    return {
      kind: 'tool_calls',
      calls: [
        { name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a + b' } },
      ],
    };
  }
  return { kind: 'final', content: 'add() now adds.' };
}

let stack: E2eStack;

beforeAll(async () => {
  stack = await startE2eStack({
    name: 'e2e-outage',
    owner: OWNER,
    repos: {
      [REPO]: {
        'calc.py': 'def add(a, b):\n    return a - b\n',
        'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
      },
    },
    script: turnFor,
    env: { INTAKE_BACKOFF_MS: '300', INTAKE_ATTEMPTS: '30' },
  });
});

afterAll(async () => {
  await stack?.close();
});

describe('e2e: GitHub down when the label arrives', () => {
  it('answers at once, retries the GitHub side, and runs the job once GitHub is back', async () => {
    const { ghe } = stack;
    const apiCallsBefore = ghe.state.requests.length;
    // Every REST and git request answers 503 until the faults are cleared.
    ghe.failNext('*', /./, 503, Number.POSITIVE_INFINITY);
    const started = performance.now();
    const issue = await stack.labelNewIssue(REPO, { title: 'add() subtracts', body: 'add(2, 3) gives -1' });
    const answeredMs = performance.now() - started;
    expect(issue.status).toBe(200);
    expect(answeredMs).toBeLessThan(1000);

    // While GitHub is down: tried (and failed), nothing written, the delivery still pending.
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    expect(ghe.state.requests.length).toBeGreaterThan(apiCallsBefore);
    expect(ghe.state.comments(OWNER, REPO, issue.number)).toEqual([]);
    expect(await stack.serve.intake.pending()).toBe(1);

    ghe.clearFaults();
    const final = await waitFor(
      () =>
        ghe.state
          .comments(OWNER, REPO, issue.number)
          .find((c) => /opened draft pull request #/.test((c.body ?? '').split('\n')[1] ?? '')),
      'the job to open its pull request after the outage',
      120_000,
    );
    const status = ghe.state
      .comments(OWNER, REPO, issue.number)
      .filter((c) => c.user?.login === ghe.botLogin && (c.body ?? '').includes(STATUS_MARKER));
    expect(status.map((c) => c.id)).toEqual([final.id]);
    expect(ghe.state.pulls(OWNER, REPO)).toHaveLength(1);
    expect(await stack.serve.intake.pending()).toBe(0);
    const jobs = await stack.serve.jobs.queue.getJobs([
      'completed',
      'failed',
      'waiting',
      'active',
      'delayed',
    ]);
    expect(jobs).toHaveLength(1);
  });
});
