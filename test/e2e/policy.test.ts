/**
 * End to end: the admin policy and the repository configuration in the running product. One real
 * `serve` and one real `worker` (in-process) with POLICY_FILE in a temporary folder, the GitHub
 * Enterprise stand-in, real Redis, the local bubblewrap sandbox and the scripted model server:
 *
 * - a repository's `.github/frognano.yml` sets `testCommand` and asks for `maxSteps: 100`; the admin
 *   policy caps `maxSteps` at 3 for `octo-org/*`. The scripted model keeps calling tools: the loop
 *   stops at 3 steps; the configured test command is the one that ran; the status comment names
 *   the cap and where it came from, and mentions the clamp;
 * - an invalid `.github/frognano.yml`: the comment lists the messages (file, key, problem); nothing
 *   is cloned, the model is not asked, no pull request;
 * - a broken policy file on reload: `/readyz` reports it and the last good policy stays in force.
 *
 * Needs Redis on 127.0.0.1:6379 (`bash scripts/setup.sh` starts it), bubblewrap, git and python3
 * with pytest.
 */
import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServe } from '../../src/bin/commands/serve.js';
import type { RunningWorker } from '../../src/bin/commands/worker.js';
import { resolveEffectivePolicy } from '../../src/config/policy.js';
import { STATUS_MARKER } from '../../src/github-app/status-comment.js';
import { startE2eStack, type E2eStack } from '../helpers/e2e-stack.js';
import type { GheStandin } from '../helpers/ghe-standin/index.js';
import type { RecordedRequest, ScriptedModelServer, ScriptedTurn } from '../helpers/scripted-model-server.js';
import { waitFor } from '../integration/queue/redis-helper.js';

const OWNER = 'octo-org';

const POLICY =
  'defaults:\n  maxTimeSec: 600\nrules:\n  - match: octo-org/*\n    maxSteps: 3\n    maxTokensPerTurn: 777\n';
const SPECIAL_COMMAND = 'python3 -m pytest -q tests/test_special.py';
/**
 * `tests/test_other.py` fails whatever the change: a run of the detected command (`python3 -m
 * pytest -q`, all tests) would fail, so a passing run proves the configured command was used.
 */
const SPECIAL_FILES = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'tests/test_special.py':
    'import sys, os\nsys.path.insert(0, os.getcwd())\nfrom calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
  'tests/test_other.py': 'def test_unrelated_and_broken():\n    assert False\n',
  '.github/frognano.yml': `testCommand: ${SPECIAL_COMMAND}\nmaxSteps: 100\n`,
};
const BROKEN_FILES = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  '.github/frognano.yml': 'maxSteps: lots\ntestComand: make test\n',
};

/** The repository a model request is about (the instruction names it). */
function repoOf(request: RecordedRequest): string {
  return JSON.stringify(request.body.messages).includes(`${OWNER}/special`) ? 'special' : 'other';
}

/** Step 1 fixes the bug; every later step calls a tool again: only the step cap ends the loop. */
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
  return { kind: 'tool_calls', calls: [{ name: 'Read', arguments: { file_path: 'calc.py' } }] };
}

let stack: E2eStack;
let ghe: GheStandin;
let model: ScriptedModelServer;
let policyFile: string;
let serve: RunningServe;
let worker: RunningWorker;

beforeAll(async () => {
  stack = await startE2eStack({
    name: 'e2e-policy',
    owner: OWNER,
    repos: { special: SPECIAL_FILES, broken: BROKEN_FILES },
    script: (req) => turnFor(req),
    policy: POLICY,
    worker: { port: 0 },
  });
  ({ ghe, model, serve } = stack);
  policyFile = stack.policyFile!;
  worker = stack.worker!;
});

afterAll(async () => {
  await stack?.close();
});

/** Open an issue in `repo`, label it as alice through a signed webhook, return its number. */
async function labelNewIssue(repo: string, title: string): Promise<number> {
  const issue = await stack.labelNewIssue(repo, { title, body: 'add(2, 3) returns -1.' });
  expect(issue.status).toBe(200);
  return issue.number;
}

/** The bot's status comment once its headline matches `headline`. */
function finalComment(repo: string, issueNumber: number, headline: RegExp, what: string) {
  return waitFor(
    () =>
      ghe.state
        .comments(OWNER, repo, issueNumber)
        .filter((c) => c.user?.login === ghe.botLogin && (c.body ?? '').includes(STATUS_MARKER))
        .find((c) => headline.test((c.body ?? '').split('\n')[1] ?? '')),
    what,
    90_000,
  );
}

describe('e2e: admin policy and repository configuration', () => {
  it('honours the repository testCommand, stops at the admin step cap, names it and the clamp', async () => {
    const n = await labelNewIssue('special', 'add() returns the difference');
    const final = await finalComment('special', n, /draft pull request #|failed|stopped|not run/, 'outcome');
    const body = final.body ?? '';

    // (b) The loop stopped at the cap of the admin rule: exactly 3 model requests.
    expect(model.requests.filter((r) => repoOf(r) === 'special')).toHaveLength(3);
    // The rule's maxTokensPerTurn is each request's max_completion_tokens (issue 12 item 2).
    expect(
      model.requests.filter((r) => repoOf(r) === 'special').map((r) => r.body.max_completion_tokens),
    ).toEqual([777, 777, 777]);
    expect(body).toContain('opened draft pull request #');
    expect(body).toContain('The agent stopped at the step cap: maxSteps 3 (admin policy rule `octo-org/*`).');
    expect(body).toContain('steps: 3 of 3');
    expect(body).toContain('exit reason: `max_turns`');
    // (c) The repository asked for 100 steps: the comment says it was lowered to the cap.
    expect(body).toContain(
      '`maxSteps`: 3 instead of the 100 `.github/frognano.yml` asks for (capped by the admin policy rule `octo-org/*`).',
    );
    // The running state showed the capped maximum.
    expect(ghe.state.commentBodies(final.id).some((b) => b.includes('running (step 1 of 3)'))).toBe(true);

    // (a) The configured test command ran (the detected one would have failed on test_other.py).
    const pulls = ghe.state.pulls(OWNER, 'special');
    expect(pulls).toHaveLength(1);
    const pr = pulls[0]!;
    expect(pr.draft).toBe(true);
    const prBody = pr.body ?? '';
    expect(prBody).toContain(`\`${SPECIAL_COMMAND}\` — **passed**`);
    expect(prBody).toContain('(command from the configuration)');
    expect(prBody).toContain(
      'The agent stopped at the step cap: maxSteps 3 (admin policy rule `octo-org/*`).',
    );
    expect(prBody).toMatch(/\| `max_turns` \| 3 of 3 \|/);
    expect(body).toContain(`Tests: \`${SPECIAL_COMMAND}\` — passed.`);
    expect(await ghe.readFile(OWNER, 'special', `frognano/issue-${n}`, 'calc.py')).toContain('a + b');
  });

  it('refuses a repository with an invalid .github/frognano.yml: messages in the comment, nothing runs', async () => {
    const before = model.requests.length;
    const n = await labelNewIssue('broken', 'add() is wrong');
    const final = await finalComment('broken', n, /not run/, 'the refusal');
    const body = final.body ?? '';
    expect(body).toContain('FrogNano did not run: the FrogNano configuration of this repository is invalid');
    // The messages, in a code block, name the file, the key path and the problem.
    const block = /```text\n([\s\S]*?)\n```/.exec(body)?.[1] ?? '';
    expect(block).toMatch(/^\.github\/frognano\.yml: maxSteps: .*"lots"/m);
    expect(block).toContain('.github/frognano.yml: testComand: unknown key; did you mean "testCommand"?');
    // The job did not run: no clone, no model request, no branch, no pull request.
    expect(model.requests.length).toBe(before);
    expect(ghe.state.gitRequests.filter((r) => r.repo === 'broken')).toEqual([]);
    expect(await ghe.listBranches(OWNER, 'broken')).toEqual(['main']);
    expect(ghe.state.pulls(OWNER, 'broken')).toEqual([]);
  });

  it('a broken policy file on reload shows in /readyz and the last good policy stays in force', async () => {
    await writeFile(policyFile, 'rules:\n  - match: octo-org/*\n    maxStep: 5\n');
    try {
      const reloaded = await serve.policyStore.reload();
      expect(reloaded.ok).toBe(false);
      const res = await fetch(`${serve.url}/readyz`);
      // The previous policy is in force, so the server stays ready; the error is reported.
      expect(res.status).toBe(200);
      const report = (await res.json()) as {
        checks: { policy?: { ok: boolean; detail?: string; messages?: string[] } };
      };
      expect(report.checks.policy?.detail).toContain('last reload failed');
      // The messages name the file, the key path and the problem.
      const messages = report.checks.policy?.messages ?? [];
      expect(messages).toHaveLength(1);
      expect(messages[0]).toContain(`${policyFile}: rules[0].maxStep: unknown key`);
      const effective = resolveEffectivePolicy({ policy: serve.policyStore.current(), repo: `${OWNER}/x` });
      expect(effective.maxSteps).toBe(3);
      // The worker watches the same file and reports the same error.
      await waitFor(
        async () => {
          const r = (await (await fetch(`${worker.url}/readyz`)).json()) as typeof report;
          return r.checks.policy?.detail?.includes('last reload failed');
        },
        'the worker /readyz to report the reload error',
        15_000,
      );
    } finally {
      await writeFile(policyFile, POLICY);
      await serve.policyStore.reload();
    }
    expect(serve.policyStore.lastError()).toBeNull();
  });
});
