import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { HUMAN_REVIEW_CHECK_NAME } from '../../../src/github-app/check-run.js';
import { createSglangClient } from '../../../src/llm/sglang-client.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { NEEDS_REVIEW_LABEL } from '../../../src/pipeline/publish-change.js';
import { runJob } from '../../../src/pipeline/run-job.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import { startScriptedModelServer } from '../../helpers/scripted-model-server.js';
import {
  fixingScript,
  leftovers,
  OWNER,
  REPO,
  REQUESTER,
  startPipelineFixture,
  type PipelineFixture,
} from './pipeline-fixture.js';

let fx: PipelineFixture;

beforeAll(async () => {
  fx = await startPipelineFixture();
});

afterAll(async () => {
  await fx?.close();
});

/** Nothing left behind by a job: no sandbox workspace, no clone; the stand-in saw no bad route. */
async function expectCleanedUp(): Promise<void> {
  expect(await leftovers(fx.sandboxRoot)).toEqual([]);
  expect(await leftovers(fx.workDir)).toEqual([]);
  expect(fx.ghe.state.unhandled).toEqual([]);
  expect(fx.ghe.state.errors).toEqual([]);
}

describe('runJob against the GHE stand-in, the local sandbox and a scripted model', () => {
  it('fixes the bug and opens a draft pull request with every field', async () => {
    const data = fx.openIssue('add() subtracts', 'calling add(2, 3) gives -1\n\n```\n>>> add(2, 3)\n-1\n```');
    const { outcome, model, progress } = await fx.run(
      data,
      fixingScript('Changed add() to add. Fixes #999 @octocat'),
    );

    expect(outcome.kind).toBe('pr_opened');
    if (outcome.kind !== 'pr_opened') return;
    expect(outcome.updated).toBe(false);
    expect(outcome.summary).toMatchObject({ exitReason: 'agent', steps: 3, maxSteps: 10 });
    expect(outcome.summary.tests).toMatchObject({
      command: 'python3 -m pytest -q',
      passed: true,
      exitCode: 0,
    });
    expect(outcome.summary.diffstat).toContain('calc.py | 2 +-');
    expect(progress.map((p) => p.stage)).toEqual([
      'preparing',
      'running',
      'running',
      'running',
      'running',
      'testing',
      'publishing',
    ]);
    expect(progress.at(-3)).toEqual({ stage: 'running', step: 3, maxSteps: 10 });

    // The instruction quoted the issue as data.
    const user = model.requests[0]?.body.messages[1];
    expect(user.role).toBe('user');
    expect(user.content).toContain(`Resolve issue #${data.issueNumber} of the repository ${OWNER}/${REPO}`);
    expect(user.content).toContain('Issue title:\n```text\nadd() subtracts\n```');
    expect(user.content).toContain('Issue body:\n````text\ncalling add(2, 3) gives -1');
    expect(user.content).toContain("The repository's tests are run with: python3 -m pytest -q");

    // The pushed branch: one commit by the app on top of the default branch, co-authored by the requester.
    const branch = `frognano/issue-${data.issueNumber}`;
    const head = await fx.ghe.readBranch(OWNER, REPO, branch);
    const main = await fx.ghe.readBranch(OWNER, REPO, 'main');
    expect(await fx.ghe.readFile(OWNER, REPO, branch, 'calc.py')).toBe('def add(a, b):\n    return a + b\n');
    const log = await fx.ghe.git(OWNER, REPO, 'log', '-1', '--format=%P%n%an%n%ae%n%cn%n%B', branch);
    const [parent, an, ae, cn, ...message] = log.split('\n');
    expect(parent).toBe(main);
    expect([an, ae, cn]).toEqual([fx.appIdentity.name, fx.appIdentity.email, fx.appIdentity.name]);
    expect(message.join('\n')).toContain(
      `Co-authored-by: ${REQUESTER} <${data.triggeredBy.id}+${REQUESTER}@users.noreply.127.0.0.1>`,
    );

    // The draft pull request.
    const pulls = fx.ghe.state.pulls(OWNER, REPO);
    expect(pulls).toHaveLength(1);
    const pr = pulls[0]!;
    expect(pr.number).toBe(outcome.pullNumber);
    expect(pr.html_url).toBe(outcome.pullUrl);
    expect(pr.draft).toBe(true);
    expect(pr.title).toBe('add() subtracts');
    expect(pr.head.ref).toBe(branch);
    expect(pr.head.sha).toBe(head);
    expect(pr.base.ref).toBe('main');
    const body = pr.body ?? '';
    expect(body).toMatch(/^> \[!WARNING\]\n> This pull request was written by a machine/);
    expect(body).toContain('review every line before merging');
    expect(body).toContain(`\nFixes #${data.issueNumber}\n`);
    // The model's message is quoted prose (no mention, no closing keyword acted upon), marked as model output.
    expect(body).toContain(
      "Model output, not reviewed — the agent's final message:\n\n> Changed add() to add. Fixes #\u200b999 @\u200boctocat\n",
    );
    expect(body).toMatch(/```\n calc\.py \| 2 \+-\n 1 file changed, 1 insertion\(\+\), 1 deletion\(-\)\n```/);
    expect(body).toContain('`python3 -m pytest -q` — **passed**');
    expect(body).toContain('<details><summary>Last lines of the test output</summary>');
    expect(body).toMatch(/1 passed/);
    expect(body).toContain('| Exit reason | Steps | Tokens | Time |');
    expect(body).toMatch(/\| `agent` \| 3 of 10 \| [\d,]+ prompt \+ [\d,]+ completion \| [\d.]+ s \|/);
    const bodyJobId = `${OWNER}.${REPO}.${data.issueNumber}.${data.deliveryId}`;
    expect(body).toContain(
      `<sub>Job \`${bodyJobId}\`; its run record: \`frognano-bot audit show ${bodyJobId}\`.`,
    );

    // Label (created in the repository), review request, check run.
    expect(fx.ghe.state.labels(OWNER, REPO, pr.number)).toContain(NEEDS_REVIEW_LABEL);
    expect(fx.ghe.state.repoLabels(OWNER, REPO).map((l) => l.name)).toContain(NEEDS_REVIEW_LABEL);
    expect(fx.ghe.state.reviewRequests).toContainEqual(
      expect.objectContaining({ pullNumber: pr.number, reviewers: [REQUESTER] }),
    );
    const runs = fx.ghe.state.checkRuns(OWNER, REPO).filter((r) => r.head_sha === head);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      name: HUMAN_REVIEW_CHECK_NAME,
      status: 'completed',
      conclusion: 'action_required',
      details_url: pr.html_url,
    });
    expect(runs[0]?.output.summary).toContain('approving review');
    expect(runs[0]?.output.summary).toContain(`other than @${REQUESTER} (who asked for the run)`);
    // The transcript of the run is the check run's text.
    expect(runs[0]?.output.text).toMatch(/^### Round 1 — job `octo-org\.calc\.\d+\./);
    expect(runs[0]?.output.text).toContain('`frognano-bot trajectory ');

    // git went over HTTP with the installation token; the trajectory and test log are stored.
    const git = fx.ghe.state.gitRequests.filter((r) => r.repo === REPO);
    expect(git.some((r) => r.service === 'git-receive-pack')).toBe(true);
    expect(git.every((r) => r.authenticated || r.status === 401)).toBe(true);
    const jobId = `${OWNER}.${REPO}.${data.issueNumber}.${data.deliveryId}`;
    const trajectory = JSON.parse(await readFile(join(fx.trajectoryDir, jobId, 'trajectory.json'), 'utf8'));
    expect(trajectory).toMatchObject({ jobId, exitReason: 'agent' });
    expect(await readFile(join(fx.trajectoryDir, jobId, 'tests-head.log'), 'utf8')).toMatch(/1 passed/);
    await expectCleanedUp();
  });

  it('updates the same pull request on a second run for the same issue', async () => {
    const data = fx.openIssue('add() is wrong again', 'see title');
    const first = await fx.run(data, fixingScript('first'));
    expect(first.outcome.kind).toBe('pr_opened');
    const again = { ...data, deliveryId: `${data.deliveryId}-again` };
    const second = await fx.run(again, fixingScript('second attempt'));
    expect(second.outcome).toMatchObject({ kind: 'pr_opened', updated: true });
    if (first.outcome.kind !== 'pr_opened' || second.outcome.kind !== 'pr_opened') return;
    expect(second.outcome.pullNumber).toBe(first.outcome.pullNumber);
    const mine = fx.ghe.state
      .pulls(OWNER, REPO)
      .filter((p) => p.head.ref === `frognano/issue-${data.issueNumber}`);
    expect(mine).toHaveLength(1);
    expect(mine[0]?.body).toContain('second attempt');
    expect(mine[0]?.head.sha).toBe(
      await fx.ghe.readBranch(OWNER, REPO, `frognano/issue-${data.issueNumber}`),
    );
    await expectCleanedUp();
  });

  it('reports failing tests without a pull request, with the patch', async () => {
    const data = fx.openIssue('make add() multiply', 'whatever');
    const script = fixingScript('done');
    script[1] = {
      kind: 'tool_calls',
      calls: [
        { name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a * b' } },
      ],
    };
    const { outcome } = await fx.run(data, script);
    expect(outcome.kind).toBe('tests_failing');
    if (outcome.kind !== 'tests_failing') return;
    expect(outcome.pullNumber).toBeUndefined();
    expect(outcome.patch).toContain('+    return a * b');
    expect(outcome.summary.tests).toMatchObject({ passed: false, exitCode: 1 });
    expect(outcome.summary.tests?.outputTail).toContain('1 failed');
    expect(await fx.ghe.readBranch(OWNER, REPO, `frognano/issue-${data.issueNumber}`)).toBeNull();
    await expectCleanedUp();
  });

  it('opens the draft anyway, with a warning, when the policy allows failing tests', async () => {
    const data = fx.openIssue('make add() multiply, draft anyway', 'whatever');
    const script = fixingScript('done');
    script[1] = {
      kind: 'tool_calls',
      calls: [
        { name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a * b' } },
      ],
    };
    const { outcome } = await fx.run(data, script, { policy: { allowDraftOnFailingTests: true } });
    expect(outcome.kind).toBe('tests_failing');
    if (outcome.kind !== 'tests_failing') return;
    const pr = fx.ghe.state.pull(OWNER, REPO, outcome.pullNumber ?? -1);
    expect(pr?.draft).toBe(true);
    expect(pr?.body).toContain('The tests FAIL with this change');
    expect(pr?.body).toContain('**failed** (exit 1)');
  });

  it('ends as no_change when the model changes nothing', async () => {
    const data = fx.openIssue('nothing to do', 'really');
    const { outcome } = await fx.run(data, [{ kind: 'final', content: 'There is nothing to change.' }]);
    expect(outcome).toMatchObject({
      kind: 'no_change',
      summary: { exitReason: 'agent', finalMessage: 'There is nothing to change.' },
    });
    await expectCleanedUp();
  });

  it('says when no test command exists, and still opens the pull request', async () => {
    await fx.ghe.createRepo(OWNER, 'notes', { files: { 'README.md': '# notes\n' } });
    fx.ghe.setPermission(OWNER, 'notes', REQUESTER, 'write');
    const data = fx.openIssue('typo in README', 'notes is spelled Notes', 'notes');
    const script = [
      {
        kind: 'tool_calls' as const,
        calls: [{ name: 'Write', arguments: { file_path: 'README.md', content: '# Notes\n' } }],
      },
      { kind: 'final' as const, content: 'Fixed the heading.' },
    ];
    const { outcome } = await fx.run(data, script);
    expect(outcome.kind).toBe('pr_opened');
    if (outcome.kind !== 'pr_opened') return;
    expect(outcome.summary.tests).toBeUndefined();
    const body = fx.ghe.state.pull(OWNER, 'notes', outcome.pullNumber)?.body ?? '';
    expect(body).toContain('No test command found');
    expect(body).toContain('**The change was not tested.**');
    await expectCleanedUp();
  });

  it('refuses to overwrite a branch a person pushed to, and opens no pull request', async () => {
    const data = fx.openIssue('someone else works here', 'x');
    await fx.ghe.commitFiles(OWNER, REPO, {
      branch: `frognano/issue-${data.issueNumber}`,
      files: { 'notes.txt': 'mine\n' },
      author: { name: 'Bob', email: 'bob@example.test' },
    });
    const before = fx.ghe.state.pulls(OWNER, REPO).length;
    const { outcome } = await fx.run(data, fixingScript());
    expect(outcome.kind).toBe('refused');
    if (outcome.kind !== 'refused') return;
    expect(outcome.reason).toContain('Bob <bob@example.test>');
    expect(fx.ghe.state.pulls(OWNER, REPO)).toHaveLength(before);
    expect(await fx.ghe.readFile(OWNER, REPO, `frognano/issue-${data.issueNumber}`, 'notes.txt')).toBe(
      'mine\n',
    );
    await expectCleanedUp();
  });

  it('stops when cancelled during the loop, names who cancelled, and destroys the sandbox', async () => {
    const data = fx.openIssue('cancel me', 'x');
    const controller = new AbortController();
    const script = fixingScript();
    script[1] = { ...script[1]!, delayMs: 5_000 } as (typeof script)[number];
    const { outcome } = await fx.run(data, script, {
      signal: controller.signal,
      onProgress: (p) => {
        if (p.stage === 'running' && p.step === 1) {
          controller.abort(
            new AppError('CANCELLED', 'the frognano label was removed', { details: { by: 'carol' } }),
          );
        }
      },
    });
    expect(outcome).toMatchObject({
      kind: 'cancelled',
      by: 'carol',
      reason: 'the frognano label was removed',
    });
    expect(await fx.ghe.readBranch(OWNER, REPO, `frognano/issue-${data.issueNumber}`)).toBeNull();
    await expectCleanedUp();
  });

  it('stops when the model runs out of time: timed_out, no pull request', async () => {
    const data = fx.openIssue('slow model', 'x');
    const script = fixingScript();
    script[1] = { ...script[1]!, delayMs: 3_000 } as (typeof script)[number];
    const { outcome } = await fx.run(data, script, { policy: { maxTimeSec: 1 } });
    expect(outcome).toMatchObject({ kind: 'timed_out', summary: { exitReason: 'max_time', steps: 1 } });
    expect(await fx.ghe.readBranch(OWNER, REPO, `frognano/issue-${data.issueNumber}`)).toBeNull();
    await expectCleanedUp();
  });

  it('refuses to run in a sandbox that can reach the network (egress probe)', async () => {
    const data = fx.openIssue('online sandbox', 'x');
    const model = await startScriptedModelServer({ script: fixingScript() });
    try {
      const deps = {
        ...fx.deps(model),
        // TESTING ONLY: a sandbox that shares the host's network, as a CNI ignoring NetworkPolicy would.
        sandboxFactory: createLocalSandboxFactory({ shareNetwork: true, workRoot: fx.sandboxRoot }),
      };
      const outcome = await runJob(data, deps, {
        signal: new AbortController().signal,
        logger: createSilentLogger(),
        progress: async () => undefined,
      });
      expect(outcome.kind).toBe('sandbox_failed');
      if (outcome.kind !== 'sandbox_failed') return;
      expect(outcome.message).toMatch(/reached (github|model-server)/);
      expect(model.requests).toHaveLength(0);
    } finally {
      await model.close();
    }
    await expectCleanedUp();
  });

  it('stops the job when the egress probe succeeds in a test sandbox (repository code is untrusted too)', async () => {
    const data = fx.openIssue('online test sandbox', 'x');
    const model = await startScriptedModelServer({ script: fixingScript() });
    const offline = createLocalSandboxFactory({ workRoot: fx.sandboxRoot });
    // TESTING ONLY: the agent's sandbox is offline, the test sandboxes share the host's network.
    const online = createLocalSandboxFactory({ shareNetwork: true, workRoot: fx.sandboxRoot });
    const created: string[] = [];
    try {
      const deps = {
        ...fx.deps(model),
        sandboxFactory: {
          driver: 'local',
          create: (o: { jobId: string }) => {
            created.push(o.jobId);
            return (o.jobId.includes('-tests-') ? online : offline).create(o);
          },
        },
      };
      const outcome = await runJob(data, deps, {
        signal: new AbortController().signal,
        logger: createSilentLogger(),
        progress: async () => undefined,
        jobId: 'egress-in-tests',
      });
      expect(outcome.kind).toBe('sandbox_failed');
      if (outcome.kind !== 'sandbox_failed') return;
      expect(outcome.message).toMatch(/the sandbox is not offline: .*reached (github|model-server)/);
      // The agent ran in its offline sandbox; the first test sandbox was probed and stopped the job.
      expect(model.requests.length).toBeGreaterThan(0);
      expect(created[0]).toBe('egress-in-tests');
      expect(created.slice(1).every((id) => id.includes('-tests-'))).toBe(true);
      expect(created).toHaveLength(2);
      expect(fx.ghe.state.pulls(OWNER, REPO).filter((p) => p.title === 'online test sandbox')).toEqual([]);
    } finally {
      await model.close();
    }
    await expectCleanedUp();
  });

  it('reports an unreachable model server as llm_unreachable', async () => {
    const data = fx.openIssue('model down', 'x');
    const model = await startScriptedModelServer({ script: [] });
    const url = model.url;
    await model.close();
    const deps = {
      ...fx.deps(model),
      createModel: () =>
        createSglangClient({
          baseURL: url,
          model: 'm',
          maxRetries: 0,
          retryBaseDelayMs: 1,
          requestTimeoutMs: 2_000,
        }),
    };
    const outcome = await runJob(data, deps, {
      signal: new AbortController().signal,
      logger: createSilentLogger(),
      progress: async () => undefined,
    });
    expect(outcome.kind).toBe('llm_unreachable');
    await expectCleanedUp();
  });
});
