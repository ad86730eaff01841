/**
 * End to end: a signed `issues.labeled` webhook (from @octokit/webhooks-examples, pointed at the
 * GitHub Enterprise stand-in) → the real `serve` → Redis (BullMQ) → the real `worker` → clone over
 * git smart HTTP with the installation token → local bubblewrap sandbox → scripted model server
 * (SGLang wire format) → tests → pushed branch → draft pull request, label, review request, human
 * review check run → approving review webhook → check run `success`.
 *
 * Needs Redis on 127.0.0.1:6379 (`bash scripts/setup.sh` starts it), bubblewrap, git and python3
 * with pytest.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HUMAN_REVIEW_CHECK_NAME } from '../../src/github-app/check-run.js';
import { STATUS_MARKER } from '../../src/github-app/status-comment.js';
import { createSilentLogger } from '../../src/observability/logger.js';
import { NEEDS_REVIEW_LABEL } from '../../src/pipeline/publish-change.js';
import { sweepStaleWorkspaceDisks } from '../../src/sandbox/local/workspace-disk.js';
import { startE2eStack, type E2eStack, type E2eStackOptions } from '../helpers/e2e-stack.js';
import type { GheStandin } from '../helpers/ghe-standin/index.js';
import type { RecordedRequest, ScriptedTurn } from '../helpers/scripted-model-server.js';
import { waitFor } from '../integration/queue/redis-helper.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const FILES = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
};
const FINAL_MESSAGE = 'add() subtracted; it now returns a + b. The test passes.';

/**
 * The model's turns, chosen by how many assistant messages the request already holds, so a job
 * that is run again after its worker died gets the same answers from the start.
 */
function turnFor(request: RecordedRequest): ScriptedTurn {
  const done = (request.body.messages as Array<{ role: string }>).filter(
    (m) => m.role === 'assistant',
  ).length;
  if (done === 0)
    return { kind: 'tool_calls', calls: [{ name: 'Read', arguments: { file_path: 'calc.py' } }] };
  if (done === 1) {
    return {
      kind: 'tool_calls',
      calls: [
        { name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a + b' } },
      ],
    };
  }
  return { kind: 'final', content: FINAL_MESSAGE };
}

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** serve (and the worker, unless `worker: false`) on a stand-in holding `octo-org/calc`; alice can write. */
async function startStack(
  name: string,
  script: E2eStackOptions['script'],
  options: Pick<E2eStackOptions, 'env' | 'worker'> = {},
): Promise<E2eStack> {
  const stack = await startE2eStack({ name, owner: OWNER, repos: { [REPO]: FILES }, script, ...options });
  cleanups.push(() => stack.close());
  return stack;
}

/** The bot's status comment on the issue (exactly one is expected). */
function statusComments(ghe: GheStandin, issueNumber: number) {
  return ghe.state
    .comments(OWNER, REPO, issueNumber)
    .filter((c) => c.user?.login === ghe.botLogin && (c.body ?? '').includes(STATUS_MARKER));
}

describe('e2e: labelled issue → draft pull request → human review', () => {
  it('ends in a pushed fix, a draft pull request with every field, and the review check turning success', async () => {
    const stack = await startStack('e2e', (req) => turnFor(req));
    const { ghe, serve } = stack;

    const issue = await stack.labelNewIssue(REPO, {
      title: 'add() returns the difference',
      body: 'add(2, 3) returns -1 instead of 5.',
    });
    const aliceId = (issue.payload.sender as { id: number }).id;
    expect(issue.status).toBe(200);

    // The status comment reaches its final state.
    const final = await waitFor(
      () =>
        statusComments(ghe, issue.number).find((c) => (c.body ?? '').includes('opened draft pull request #')),
      'the status comment to announce the pull request',
      90_000,
    );
    expect(statusComments(ghe, issue.number)).toHaveLength(1);
    const history = ghe.state.commentBodies(final.id);
    expect(history[0]).toContain('queued');
    expect(history.some((b) => b.includes('running (step'))).toBe(true);
    expect(ghe.state.reactions.some((r) => r.content === 'eyes')).toBe(true);

    // Exactly one pull request, a draft, with every field.
    const pulls = ghe.state.pulls(OWNER, REPO).filter((p) => p.head.ref === `frognano/issue-${issue.number}`);
    expect(pulls).toHaveLength(1);
    const pr = pulls[0]!;
    expect(final.body).toContain(`[#${pr.number}](${pr.html_url})`);
    expect(pr).toMatchObject({ draft: true, state: 'open', title: 'add() returns the difference' });
    expect(pr.base.ref).toBe('main');
    const body = pr.body ?? '';
    expect(body).toMatch(/^> \[!WARNING\]\n> This pull request was written by a machine/);
    expect(body).toContain(`Fixes #${issue.number}`);
    expect(body).toContain(`Model output, not reviewed — the agent's final message:\n\n> ${FINAL_MESSAGE}\n`);
    expect(body).toContain(' calc.py | 2 +-');
    expect(body).toContain('`python3 -m pytest -q` — **passed**');
    expect(body).toMatch(
      /<details><summary>Last lines of the test output<\/summary>[\s\S]*1 passed[\s\S]*<\/details>/,
    );
    expect(body).toContain('| Exit reason | Steps | Tokens | Time |');
    expect(body).toMatch(/\| `agent` \| 3 of 150 \| [\d,]+ prompt \+ [\d,]+ completion \| [\d.]+ s \|/);
    expect(body).toMatch(
      /<sub>Job `(octo-org\.calc\.\d+\.[^`]+)`; its run record: `frognano-bot audit show \1`\./,
    );
    expect(ghe.state.labels(OWNER, REPO, pr.number)).toContain(NEEDS_REVIEW_LABEL);
    expect(ghe.state.reviewRequests).toContainEqual(
      expect.objectContaining({ pullNumber: pr.number, reviewers: ['alice'] }),
    );

    // The pushed branch: one commit by the app on main, fixing the bug, co-authored by alice.
    const head = await ghe.readBranch(OWNER, REPO, `frognano/issue-${issue.number}`);
    expect(pr.head.sha).toBe(head);
    expect(await ghe.readFile(OWNER, REPO, head!, 'calc.py')).toBe('def add(a, b):\n    return a + b\n');
    const [parent, authorName, authorEmail, ...message] = (
      await ghe.git(OWNER, REPO, 'log', '-1', '--format=%P%n%an%n%ae%n%B', head!)
    ).split('\n');
    expect(parent).toBe(await ghe.readBranch(OWNER, REPO, 'main'));
    expect(authorName).toBe(ghe.botLogin);
    expect(authorEmail).toBe(`${ghe.botLogin}@users.noreply.127.0.0.1`);
    expect(message.join('\n')).toContain(`Co-authored-by: alice <${aliceId}+alice@users.noreply.127.0.0.1>`);
    // git was used over HTTP with the installation token (no anonymous push got through).
    const pushes = ghe.state.gitRequests.filter(
      (r) => r.repo === REPO && r.service === 'git-receive-pack' && r.status === 200,
    );
    expect(pushes.length).toBeGreaterThan(0);
    expect(pushes.every((r) => r.authenticated)).toBe(true);

    // The human review check run: action_required on the head commit…
    const check = () =>
      ghe.state.checkRuns(OWNER, REPO).find((r) => r.head_sha === head && r.name === HUMAN_REVIEW_CHECK_NAME);
    expect(check()).toMatchObject({
      status: 'completed',
      conclusion: 'action_required',
      details_url: pr.html_url,
    });
    // Its text is the run's transcript, one row per step.
    expect(check()?.output.text).toContain('### Round 1 — job `');
    expect(check()?.output.text).toMatch(/^\| 1 \| `\w+` \|/m);
    // alice asked for the run: her approval alone leaves it action_required (review.requireSecondPerson)…
    const own = ghe.submitReview({ owner: OWNER, repo: REPO, pullNumber: pr.number, reviewer: 'alice' });
    expect((await ghe.sendWebhook(serve.webhookUrl, 'pull_request_review', own)).status).toBe(200);
    await serve.intake.idle();
    expect(check()).toMatchObject({ conclusion: 'action_required' });
    expect(check()?.output.summary).toContain('other than @alice (who asked for the run)');
    // …then success after an approving review by a second person with write access.
    ghe.setPermission(OWNER, REPO, 'bob', 'write');
    const review = ghe.submitReview({ owner: OWNER, repo: REPO, pullNumber: pr.number, reviewer: 'bob' });
    const reviewed = await ghe.sendWebhook(serve.webhookUrl, 'pull_request_review', review);
    expect(reviewed.status).toBe(200);
    // Answered once recorded; the check run is updated by the intake step.
    await serve.intake.idle();
    expect(check()).toMatchObject({ conclusion: 'success' });
    expect(check()?.output.title).toBe('Approved by @bob');

    // The bot never marked it ready, approved or merged it.
    expect(ghe.state.pull(OWNER, REPO, pr.number)).toMatchObject({
      draft: true,
      state: 'open',
      merged: false,
    });
    expect(ghe.state.requestsTo('PUT', /\/merge$/)).toEqual([]);
    expect(ghe.state.requestsTo('POST', /\/reviews$/)).toEqual([]);
    expect(ghe.state.unhandled).toEqual([]);
    expect(ghe.state.errors).toEqual([]);
  });

  it('a worker killed with SIGKILL in the middle of a job: the job runs again and ends with exactly one pull request', async () => {
    let delayed = false;
    let onSecondStep: (() => void) | null = null;
    const stack = await startStack(
      'e2e-kill',
      (req) => {
        const turn = turnFor(req);
        // The first time the model is asked for step 2, hold the answer: the worker is killed meanwhile.
        if (!delayed && turn.kind === 'tool_calls' && turn.calls[0]?.name === 'Edit') {
          delayed = true;
          onSecondStep?.();
          return { ...turn, delayMs: 30_000 };
        }
        return turn;
      },
      {
        // Short locks so the job of the dead worker is found stalled within seconds.
        env: {
          JOB_LOCK_DURATION_MS: '2000',
          STALLED_INTERVAL_MS: '1000',
          MAX_STALLED_COUNT: '1',
          WORKER_CONCURRENCY: '1',
        },
        worker: false,
      },
    );
    const { ghe, model, vars } = stack;

    // The first worker is a child process running `frognano-bot worker`.
    const secondStep = new Promise<void>((resolve) => (onSecondStep = resolve));
    // Its sandbox workspaces go below the test's folder: a killed worker cannot remove them itself.
    const childTmp = join(stack.root, 'tmp');
    await mkdir(childTmp, { recursive: true });
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/bin/cli.ts', 'worker'], {
      cwd: join(import.meta.dirname, '..', '..'),
      env: { ...process.env, ...vars, TMPDIR: childTmp },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let childErr = '';
    child.stderr?.on('data', (c: Buffer) => (childErr = (childErr + c.toString()).slice(-4000)));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // After the kill (cleanups run last-in first-out): unmount the dead worker's workspaces.
    cleanups.push(() => sweepStaleWorkspaceDisks(childTmp, createSilentLogger()));
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
      await exited;
    });

    const issue = await stack.labelNewIssue(REPO, { title: 'add() is broken', body: 'add(2, 3) != 5' });
    expect(issue.status).toBe(200);

    await Promise.race([
      secondStep,
      exited.then(() => {
        throw new Error(`the worker child exited early: ${childErr}`);
      }),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error(`no step 2 within 60 s: ${childErr}`)), 60_000),
      ),
    ]);
    // Kill the worker (and its sandbox processes) in the middle of the agent loop.
    process.kill(-child.pid!, 'SIGKILL');
    await exited;

    // A new worker takes the stalled job over and finishes it.
    await stack.startWorker();
    const final = await waitFor(
      () =>
        statusComments(ghe, issue.number).find((c) =>
          /opened draft pull request #|failed|stopped/.test((c.body ?? '').split('\n')[1] ?? ''),
        ),
      'the status comment of the restarted job to reach its outcome',
      90_000,
    );
    expect(statusComments(ghe, issue.number)).toHaveLength(1);
    const pulls = ghe.state.pulls(OWNER, REPO).filter((p) => p.head.ref === `frognano/issue-${issue.number}`);
    expect(pulls).toHaveLength(1);
    expect(final.body).toContain(`opened draft pull request #${pulls[0]!.number}`);
    // The job really ran twice: the first step was asked for by the killed worker and by the new one.
    const firstSteps = model.requests.filter(
      (r) => turnFor(r).kind === 'tool_calls' && r.body.messages.length === 2,
    );
    expect(firstSteps).toHaveLength(2);
    expect(await ghe.readFile(OWNER, REPO, `frognano/issue-${issue.number}`, 'calc.py')).toContain('a + b');
    expect(ghe.state.unhandled).toEqual([]);
    expect(ghe.state.errors).toEqual([]);
  });
});
