/**
 * End to end (issue 6, "Done when"): the real `serve` and `worker` against the GitHub Enterprise
 * stand-in, real Redis, the local bubblewrap sandbox and the scripted model server, on a Python
 * project with one failing test for the issue (`test_calc::test_add`) and one unrelated failing test
 * (`test_strings::test_shout`). The scripted model
 *
 * 1. fixes the bug → the table shows one fixed and one still failing, nothing broken;
 * 2. deletes the failing test instead → no claim of a fix, tampering flagged with label and warning;
 * 3. edits `.github/workflows/ci.yml` → refused, the comment names the path;
 * 4. adds a line with a private key → refused, the key is not repeated;
 * 5. with `attempts: 3` (admin policy), only the second attempt's patch passes → the pull request
 *    carries the second attempt and lists all three; every attempt's trajectory is stored.
 *
 * One serve + worker stack serves all cases; each case has its own repository. The model's answers
 * are chosen by the repository named in the instruction and by the attempt, which the worker's
 * model factory passes as the API key (`attempt-<n>`).
 *
 * Needs Redis on 127.0.0.1:6379 (`bash scripts/setup.sh` starts it), bubblewrap, git and python3
 * with pytest.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main as trajectoryCommand } from '../../src/bin/commands/trajectory.js';
import { STATUS_MARKER } from '../../src/github-app/status-comment.js';
import { createSglangClient } from '../../src/llm/sglang-client.js';
import { TESTS_MODIFIED_LABEL } from '../../src/pipeline/verification/test-tampering.js';
import { NEEDS_REVIEW_LABEL } from '../../src/pipeline/publish-change.js';
import { startE2eStack, type E2eStack } from '../helpers/e2e-stack.js';
import type { GheStandin } from '../helpers/ghe-standin/index.js';
import type { RecordedRequest, ScriptedTurn } from '../helpers/scripted-model-server.js';
import { waitFor } from '../integration/queue/redis-helper.js';

const OWNER = 'octo-org';
const FILES: Record<string, string> = {
  'calc.py': 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + (-b)\n',
  'test_calc.py':
    'from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n',
  'strings.py': 'def shout(s):\n    return s.upper()\n',
  'test_strings.py': "from strings import shout\n\n\ndef test_shout():\n    assert shout('hi') == 'HI!'\n",
  '.github/workflows/ci.yml':
    'on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: python3 -m pytest\n',
};
// Assembled at run time so that this file holds no private key.
const PEM_HEADER = '-----BEGIN ' + 'RSA PRIVATE KEY-----';

const edit = (file_path: string, old_string: string, new_string: string): ScriptedTurn => ({
  kind: 'tool_calls',
  calls: [{ name: 'Edit', arguments: { file_path, old_string, new_string } }],
});
const FIX = edit('calc.py', 'a - b', 'a + b');

/** What the model does, per repository (and attempt). */
const BEHAVIOUR: Record<string, (attempt: number) => ScriptedTurn[]> = {
  'calc-fix': () => [FIX, { kind: 'final', content: 'add() subtracted; it now adds.' }],
  'calc-delete': () => [
    edit('test_calc.py', 'def test_add():\n    assert add(2, 3) == 5\n\n\n', ''),
    { kind: 'final', content: 'Removed the failing test.' },
  ],
  'calc-workflow': () => [
    FIX,
    edit('.github/workflows/ci.yml', 'python3 -m pytest', 'true'),
    { kind: 'final', content: 'Fixed add() and made CI faster.' },
  ],
  'calc-secret': () => [
    FIX,
    {
      kind: 'tool_calls',
      calls: [
        { name: 'Write', arguments: { file_path: 'deploy_key.pem', content: `${PEM_HEADER}\nMIIEow\n` } },
      ],
    },
    { kind: 'final', content: 'Fixed add() and added the deploy key.' },
  ],
  'calc-best': (attempt) => [
    // Attempt 1 changes add() without fixing it; attempt 2 fixes it; attempt 3 breaks sub().
    attempt === 1
      ? edit('calc.py', 'a - b', 'a * b')
      : attempt === 2
        ? FIX
        : edit('calc.py', 'a + (-b)', 'a + b'),
    { kind: 'final', content: `Attempt ${attempt} done.` },
  ],
};

/** The scripted answer to one request: by repository (from the instruction), attempt and turn. */
function turnFor(request: RecordedRequest): ScriptedTurn {
  const messages = request.body.messages as Array<{ role: string; content?: string }>;
  const repo = /of the repository octo-org\/([\w-]+)/.exec(messages[1]?.content ?? '')?.[1] ?? '';
  const attempt = Number(/attempt-(\d+)/.exec(String(request.headers.authorization))?.[1] ?? 1);
  const script = BEHAVIOUR[repo]?.(attempt) ?? [{ kind: 'final', content: 'unknown repository' }];
  const turn = messages.filter((m) => m.role === 'assistant').length;
  return script[Math.min(turn, script.length - 1)] as ScriptedTurn;
}

let stack: E2eStack;
let ghe: GheStandin;
let trajectoryDir: string;
const runs = new Map<string, Promise<{ issue: number; comment: string }>>();

beforeAll(async () => {
  stack = await startE2eStack({
    name: 'e2e-trust',
    owner: OWNER,
    repos: Object.fromEntries(Object.keys(BEHAVIOUR).map((repo) => [repo, FILES])),
    script: (req) => turnFor(req),
    // Best-of-3 for one repository only (an admin-only cap; the repository could only lower it).
    policy: 'rules:\n  - match: octo-org/calc-best\n    attempts: 3\n',
    // All five jobs run at once (each in its own repository): the stack mostly waits on processes.
    env: { WORKER_CONCURRENCY: '5' },
    worker: {
      // The attempt travels as the API key, so the scripted server can answer each attempt differently.
      createModel: ({ candidate: attempt }, { model, env, logger }) =>
        createSglangClient({
          baseURL: model.url,
          model: env.modelName,
          apiKey: `attempt-${attempt}`,
          maxRetries: 0,
          logger,
        }),
    },
  });
  ({ ghe, trajectoryDir } = stack);
  // Start every case now; each test awaits its own (a failure surfaces in that test).
  for (const repo of Object.keys(BEHAVIOUR)) {
    const run = runIssue(repo);
    run.catch(() => undefined);
    runs.set(repo, run);
  }
});

afterAll(async () => {
  await stack?.close();
});

/** Open an issue in `repo`, label it through a signed webhook, and wait for the final status comment. */
async function runIssue(repo: string): Promise<{ issue: number; comment: string }> {
  const issue = await stack.labelNewIssue(repo, {
    title: 'add() returns the difference',
    body: 'add(2, 3) returns -1 instead of 5.',
  });
  expect(issue.status).toBe(200);
  const final = await waitFor(
    () =>
      ghe.state
        .comments(OWNER, repo, issue.number)
        .find(
          (c) =>
            c.user?.login === ghe.botLogin &&
            (c.body ?? '').includes(STATUS_MARKER) &&
            /draft pull request #|refused|tests still fail|failed|stopped|without changing/.test(
              (c.body ?? '').split('\n').slice(0, 3).join('\n'),
            ),
        ),
    `the status comment of ${repo}#${issue.number} to reach its outcome`,
    55_000,
  );
  return { issue: issue.number, comment: final.body ?? '' };
}

function pullsOf(repo: string, issue: number) {
  return ghe.state.pulls(OWNER, repo).filter((p) => p.head.ref === `frognano/issue-${issue}`);
}

describe('e2e: every pull request carries evidence', () => {
  it('a fix: the table shows one fixed, one still failing, nothing broken', async () => {
    const { issue, comment } = await runs.get('calc-fix')!;
    const [pr, ...more] = pullsOf('calc-fix', issue);
    expect(more).toEqual([]);
    expect(comment).toContain(`opened draft pull request #${pr!.number}`);
    const body = pr!.body ?? '';
    expect(body).toContain('### Tests on base and head');
    expect(body).toContain(
      'With this change 1 test that failed on the base branch passes, and no test that passed breaks.',
    );
    expect(body).toContain('| Fixed (failed → passed) | 1 | `test_calc::test_add` |');
    // Rows of zeros are left out: the verdict above already says nothing broke.
    expect(body).not.toContain('| Broken (passed → failed)');
    expect(body).toContain('| Still failing | 1 | `test_strings::test_shout` |');
    expect(body).toContain('| Passing on both | 1 |');
    expect(body).toContain(`Fixes #${issue}`);
    expect(body).not.toContain('modifies the tests');
    expect(ghe.state.labels(OWNER, 'calc-fix', pr!.number)).toEqual([NEEDS_REVIEW_LABEL]);
    expect(comment).toContain('With this change 1 test that failed on the base branch passes');
  });

  it('a deleted failing test: no claim of a fix, tampering flagged with the label and a warning at the top', async () => {
    const { issue } = await runs.get('calc-delete')!;
    const [pr] = pullsOf('calc-delete', issue);
    expect(pr).toBeDefined();
    const body = pr!.body ?? '';
    // The first warning after the machine-written one is the tampering warning.
    const warnings = body.split('\n\n').filter((p) => p.startsWith('> [!WARNING]'));
    expect(warnings[1]).toMatch(/^> \[!WARNING\]\n> This change modifies the tests/);
    expect(warnings[1]).toContain('test `test_add` removed from `test_calc.py`');
    expect(body).not.toContain('| Fixed (failed → passed)');
    expect(body).toContain('| Removed tests | 1 | `test_calc::test_add (was failed)` |');
    expect(body).toContain('No test that failed on the base branch passes with this change');
    expect(body).not.toContain(`Fixes #${issue}`);
    expect(body).toContain(`Related to #${issue}.`);
    expect(body).toContain('| `test_calc.py` | modified | +0 | −4 |');
    expect(ghe.state.labels(OWNER, 'calc-delete', pr!.number).sort()).toEqual(
      [NEEDS_REVIEW_LABEL, TESTS_MODIFIED_LABEL].sort(),
    );
  });

  it('a workflow edit: refused, the comment names the path, nothing pushed', async () => {
    const { issue, comment } = await runs.get('calc-workflow')!;
    expect(comment).toContain('change refused — no pull request opened');
    expect(comment).toContain('`.github/workflows/ci.yml` (protected by `.github/workflows/**`');
    expect(pullsOf('calc-workflow', issue)).toEqual([]);
    expect(await ghe.readBranch(OWNER, 'calc-workflow', `frognano/issue-${issue}`)).toBeNull();
  });

  it('a private key: refused, with file and line but not the key', async () => {
    const { issue, comment } = await runs.get('calc-secret')!;
    expect(comment).toContain('change refused — no pull request opened');
    expect(comment).toContain('Line 1 of `deploy_key.pem` adds what looks like a private key');
    expect(comment).not.toContain('PRIVATE KEY-----');
    expect(pullsOf('calc-secret', issue)).toEqual([]);
    expect(await ghe.readBranch(OWNER, 'calc-secret', `frognano/issue-${issue}`)).toBeNull();
  });

  it('best of three: the second attempt is published, all three are listed and stored', async () => {
    const { issue, comment } = await runs.get('calc-best')!;
    const [pr, ...more] = pullsOf('calc-best', issue);
    expect(more).toEqual([]);
    expect(comment).toContain(`opened draft pull request #${pr!.number}`);
    expect(await ghe.readFile(OWNER, 'calc-best', pr!.head.sha, 'calc.py')).toBe(
      'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + (-b)\n',
    );
    const body = pr!.body ?? '';
    expect(body).toContain('### Candidates');
    expect(body).toContain(
      'Candidate 2 was chosen: it breaks no test and fixes 1 test, more than any other (next best: candidate 1 with none fixed).',
    );
    expect(body).toContain('| 1 | 0 fixed, 0 broken, 2 still failing; 2 lines in 1 file |');
    expect(body).toContain('| 2 | **chosen** — 1 fixed, 0 broken, 1 still failing; 2 lines in 1 file |');
    expect(body).toContain('| 3 | 0 fixed, 1 broken, 2 still failing; 2 lines in 1 file |');
    expect(body).toContain('| Fixed (failed → passed) | 1 | `test_calc::test_add` |');

    // Every attempt's trajectory and test log is kept; the trajectory command prints any of them.
    const jobId = /<sub>Job `([^`]+)`/.exec(body)?.[1] ?? '';
    const stored = await readdir(join(trajectoryDir, jobId));
    expect(stored).toEqual(
      expect.arrayContaining([
        'candidate-1.json',
        'candidate-2.json',
        'candidate-3.json',
        'candidates.json',
        'trajectory.json',
        'tests-base.log',
        'tests-head-candidate-1.log',
        'tests-head-candidate-2.log',
        'tests-head-candidate-3.log',
      ]),
    );
    expect(JSON.parse(await readFile(join(trajectoryDir, jobId, 'candidates.json'), 'utf8'))).toMatchObject({
      chosen: 2,
    });
    const printed: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      printed.push(String(chunk));
      return true;
    });
    try {
      expect(await trajectoryCommand([jobId, '--candidate', '3', '--dir', trajectoryDir])).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect(printed.join('')).toContain('Candidate 3 of 3. Candidate 2 was chosen');
    expect(printed.join('')).toContain('a + (-b)');
  });
});
