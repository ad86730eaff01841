import { describe, expect, it } from 'vitest';
import {
  capStopLine,
  describePolicySource,
  FOLLOW_UP_STATUS_MARKER,
  renderStatus,
  STATUS_MARKER,
  untrusted,
} from '../../../src/github-app/status-comment.js';
import type { Outcome, RunSummary } from '../../../src/pipeline/outcome.js';

const summary: RunSummary = {
  jobId: 'o.r.1.d',
  exitReason: 'agent',
  steps: 12,
  maxSteps: 100,
  promptTokens: 123456,
  completionTokens: 789,
  elapsedMs: 192_000,
  finalMessage: 'done',
  diffstat: ' calc.py | 2 +-',
  tests: {
    command: 'pytest -q',
    exitCode: 1,
    passed: false,
    outputTail: 'FAILED test_add\n1 failed',
    timedOut: false,
  },
};

const all: Outcome[] = [
  {
    kind: 'pr_opened',
    pullNumber: 5,
    pullUrl: 'https://ghe/o/r/pull/5',
    updated: false,
    summary: { ...summary, tests: { ...summary.tests!, passed: true, exitCode: 0 } },
  },
  { kind: 'no_change', summary },
  { kind: 'tests_failing', patch: 'diff --git a/x b/x\n-1\n+2\n', summary },
  { kind: 'llm_unreachable', message: 'ECONNREFUSED 10.0.0.5:30000' },
  { kind: 'sandbox_failed', message: 'bwrap: setting up uid map: Permission denied' },
  { kind: 'timed_out', message: 'the agent ran for 1800 s' },
  { kind: 'cancelled', by: 'trish', reason: 'the frognano label was removed' },
  {
    kind: 'refused',
    reason: 'invalid configuration',
    details: ['.github/frognano.yml: maxSteps: must be a number'],
  },
  { kind: 'github_error', message: 'Resource not accessible by integration', status: 403, retryable: false },
  { kind: 'failed', code: 'INTERNAL', message: 'boom', retryable: false },
  {
    kind: 'sandbox_failed',
    cause: 'protocol',
    message: 'the sandbox broke its protocol: a reply with id 999, which no request waits for',
  },
];

describe('renderStatus', () => {
  it('starts with the marker and has its own headline for every outcome kind', () => {
    const headlines = all.map((outcome) => {
      const body = renderStatus({ phase: 'finished', outcome }, { jobId: 'o.r.1.d' });
      expect(body.startsWith(`${STATUS_MARKER}\n`)).toBe(true);
      expect(body).toContain('job `o.r.1.d`');
      return body.split('\n')[1];
    });
    expect(new Set(headlines).size).toBe(all.length);
  });

  it('says what happened and what a person can do next', () => {
    const text = (o: Outcome) => renderStatus({ phase: 'finished', outcome: o });
    expect(text(all[0]!)).toContain('Opened [#5](https://ghe/o/r/pull/5) as a **draft**');
    expect(text(all[0]!)).toContain('cannot be merged until a person with write access approves it');
    expect(text(all[1]!)).toContain('add detail to the issue');
    expect(text(all[2]!)).toContain('no pull request was opened');
    expect(text(all[2]!)).toContain('<details><summary>Patch</summary>');
    expect(text(all[2]!)).toContain('```diff\ndiff --git a/x b/x');
    expect(text(all[2]!)).toContain('<details><summary>Test output (end)</summary>');
    expect(text(all[3]!)).toContain('ask an administrator to check the model server');
    expect(text(all[6]!)).toContain('cancelled by @trish');
    expect(text(all[6]!)).toContain(
      '@trish cancelled the job: the frognano label was removed. Nothing was pushed.',
    );
    expect(text(all[7]!)).toContain('```text\n.github/frognano.yml: maxSteps: must be a number\n```');
    expect(text(all[8]!)).toContain('(HTTP 403)');
    expect(text(all[10]!)).toContain('stopped: the sandbox broke its protocol');
    expect(text(all[10]!)).toContain('nothing it reported was used; nothing was pushed');
    expect(text(all[4]!)).not.toContain('broke its protocol');
    expect(text(all[8]!)).toContain('check the app’s permissions');
    expect(text(all[1]!)).toContain(
      'steps: 12 of 100 · tokens: 123,456 prompt + 789 completion · time: 3 min 12 s · exit reason: `agent`',
    );
  });

  it('names the cap that stopped the loop and where it came from, and lists clamps', () => {
    const capped: RunSummary = {
      ...summary,
      exitReason: 'max_turns',
      steps: 3,
      maxSteps: 3,
      caps: {
        maxSteps: { value: 3, source: 'policy:rule[0] (octo-org/*)' },
        maxTimeSec: { value: 600, source: 'policy:defaults' },
      },
      clamps: [
        {
          key: 'maxSteps',
          requested: 100,
          applied: 3,
          cap: 3,
          source: '.github/frognano.yml',
          capSource: 'policy:rule[0] (octo-org/*)',
        },
      ],
    };
    const body = renderStatus({ phase: 'finished', outcome: { kind: 'no_change', summary: capped } });
    expect(body).toContain('The agent stopped at the step cap: maxSteps 3 (admin policy rule `octo-org/*`).');
    expect(body).toContain(
      '- `maxSteps`: 3 instead of the 100 `.github/frognano.yml` asks for (capped by the admin policy rule `octo-org/*`).',
    );
    const timed = renderStatus({
      phase: 'finished',
      outcome: { kind: 'timed_out', message: 'too slow', summary: { ...capped, exitReason: 'max_time' } },
    });
    expect(timed).toContain('The agent stopped at the time cap: maxTimeSec 600 (admin policy defaults).');
    // A run that ended by itself names no cap; without `caps` the value is still given.
    expect(renderStatus({ phase: 'finished', outcome: { kind: 'no_change', summary } })).not.toContain(
      'cap:',
    );
    expect(capStopLine({ ...summary, exitReason: 'max_turns' })).toBe(
      'The agent stopped at the step cap: maxSteps 100.',
    );
    expect(describePolicySource('default')).toBe('built-in default');
    expect(describePolicySource('repo')).toBe('the repository’s `.github/frognano.yml`');
  });

  it('shows configuration messages in a code block they cannot close', () => {
    const body = renderStatus({
      phase: 'finished',
      outcome: { kind: 'refused', reason: 'invalid', details: ['a.yml: x: got "```" @admin'] },
    });
    expect(body).toContain('````text\na.yml: x: got "```" @admin\n````');
  });

  it('shows progress states', () => {
    expect(renderStatus({ phase: 'queued', position: 3, triggeredBy: 'alice' })).toContain(
      'queued (position 3)',
    );
    expect(renderStatus({ phase: 'running', step: 4, maxSteps: 100 })).toContain('running (step 4 of 100)');
    expect(renderStatus({ phase: 'testing', command: 'npm test' })).toContain('Running `npm test`.');
    expect(renderStatus({ phase: 'not_queued', reason: 'Redis down' })).toContain('could not be queued');
  });

  it('keeps a fence that the patch cannot close, and cuts long patches', () => {
    const patch = `+ \`\`\`\`\n${'x'.repeat(50_000)}`;
    const body = renderStatus({ phase: 'finished', outcome: { kind: 'tests_failing', patch, summary } });
    expect(body).toContain('`````diff');
    expect(body).toContain('first 40,000 of');
    expect(body.length).toBeLessThan(65_536);
  });

  it('defuses mentions and HTML in untrusted text', () => {
    expect(untrusted('@everyone <img src=x> & co')).toBe('@\u200beveryone &lt;img src=x&gt; &amp; co');
    const body = renderStatus({
      phase: 'finished',
      outcome: { kind: 'failed', code: 'INTERNAL', message: 'ping @admin', retryable: false },
    });
    expect(body).not.toContain('@admin');
  });
});

describe('retries and the pull request comment', () => {
  it('calls a BullMQ re-run a retry, counted among the retries', () => {
    const body = renderStatus({ phase: 'retrying', retry: 1, maxRetries: 2, reason: 'HTTP 502' });
    expect(body).toContain('will try again (retry 1 of 2)');
    expect(body).not.toContain('attempt');
  });

  it('gives a pull request its own marker and says how to cancel there', () => {
    const body = renderStatus({ phase: 'running', step: 2, maxSteps: 5 }, { subject: 'pull' });
    expect(body.startsWith(FOLLOW_UP_STATUS_MARKER)).toBe(true);
    expect(body).not.toContain(STATUS_MARKER);
    expect(body).toContain('running (step 2 of 5)');
    expect(body).toContain('Comment `/frognano stop` or close the pull request to cancel.');
    expect(renderStatus({ phase: 'running', step: 2, maxSteps: 5 })).toContain(
      'Remove the label or close the issue to cancel.',
    );
  });
});
