import { describe, expect, it } from 'vitest';
import {
  MAX_BODY_CHARS,
  pullRequestTitle,
  renderPullRequestBody,
} from '../../../src/github-app/pull-request.js';
import type { PullRequestBodyInput } from '../../../src/pipeline/publish-change.js';

function input(overrides: Partial<PullRequestBodyInput> = {}): PullRequestBodyInput {
  return {
    issueNumber: 12,
    fixesKeyword: 'Resolves',
    requester: 'alice',
    warnings: [],
    sections: [],
    tests: {
      command: 'npm test',
      source: 'npm: package.json has a test script',
      exitCode: 0,
      passed: true,
      timedOut: false,
      outputTail: 'ok 1\nok 2',
      output: 'ok 1\nok 2',
      durationMs: 4_200,
    },
    summary: {
      jobId: 'acme.widgets.12.d1',
      exitReason: 'max_turns',
      steps: 150,
      maxSteps: 150,
      promptTokens: 1000,
      completionTokens: 20,
      elapsedMs: 185_000,
      finalMessage: 'Done. ```\nbreak out\n``` @everyone Closes #1',
      diffstat: ' a.js | 1 +\n 1 file changed, 1 insertion(+)',
    },
    ...overrides,
  };
}

describe('renderPullRequestBody', () => {
  it('puts the warning first, the keyword, the quoted model output, diffstat, tests and run facts', () => {
    const body = renderPullRequestBody(input());
    expect(body.indexOf('> [!WARNING]')).toBe(0);
    expect(body).toContain('\n\nResolves #12\n\n');
    // The model's text is quoted prose under a line saying whose it is: its backticks are escaped,
    // its mention and closing keyword defused (a zero-width space after @ and #).
    expect(body).toContain(
      "Model output, not reviewed — the agent's final message:\n\n" +
        '> Done. \\`\\`\\`\\\n> break out\\\n> \\`\\`\\` @\u200beveryone Closes #\u200b1\n\n',
    );
    expect(body).toContain('```\n a.js | 1 +\n 1 file changed, 1 insertion(+)\n```');
    expect(body).toContain(
      '`npm test` — **passed** in 4.2 s, in a fresh sandbox on the patched tree (detected: npm: package.json has a test script).',
    );
    expect(body).toContain(
      '<details><summary>Last lines of the test output</summary>\n\n```text\nok 1\nok 2\n```\n\n</details>',
    );
    expect(body).toContain(
      '| Exit reason | Steps | Tokens | Time |\n|---|---|---|---|\n' +
        '| `max_turns` | 150 of 150 | 1,000 prompt + 20 completion | 3 min 5 s |\n\n<sub>Job `acme.widgets.12.d1`; its run record: `frognano-bot audit show acme.widgets.12.d1`.',
    );
    expect(body).toContain(
      'The agent stopped at the step cap: maxSteps 150. The model may not have finished',
    );
    expect(body).toContain('for @alice, who labelled the issue');
  });

  it('says so when no test command was found, and reports a failed setup and timeouts', () => {
    expect(renderPullRequestBody(input({ tests: null }))).toContain('No test command found');
    const failed = renderPullRequestBody(
      input({
        tests: {
          ...input().tests!,
          passed: false,
          exitCode: null,
          timedOut: true,
          source: 'configured',
          setup: { command: 'make deps', exitCode: 2, timedOut: false },
        },
      }),
    );
    expect(failed).toContain('— **failed** (timed out)');
    expect(failed).toContain('(command from the configuration)');
    expect(failed).toContain('Setup: `make deps` — failed (exit 2).');
  });

  it('adds warnings and sections, and handles a missing final message', () => {
    const body = renderPullRequestBody(
      input({
        warnings: ['Tests were deleted.\nLook closely.'],
        sections: [{ title: 'Attempts', markdown: '| 1 | 2 |' }],
        summary: { ...input().summary, finalMessage: null },
      }),
    );
    expect(body).toContain('> [!WARNING]\n> Tests were deleted.\n> Look closely.');
    expect(body).toContain('### Attempts\n\n| 1 | 2 |');
    expect(body).toContain('_The model ended without a final message._');
  });

  it('stays under GitHub’s body limit', () => {
    const huge = 'x'.repeat(200_000);
    const body = renderPullRequestBody(
      input({
        summary: { ...input().summary, diffstat: huge },
        tests: { ...input().tests!, outputTail: huge },
      }),
    );
    expect(body.length).toBeLessThanOrEqual(MAX_BODY_CHARS + 100);
    expect(body).toMatch(/the rest of this description was cut\]$/);
  });
});

describe('pullRequestTitle', () => {
  it('uses the issue title on one line, capped at 256 characters', () => {
    expect(pullRequestTitle('  Fix\n add()  ', 3)).toBe('Fix add()');
    expect(pullRequestTitle('', 3)).toBe('Fix issue #3');
    expect(pullRequestTitle('a'.repeat(300), 3)).toHaveLength(256);
  });
});
