/**
 * End to end, one review round (issue 11): labelled issue → draft pull request → a
 * `changes_requested` review with an inline comment → the real worker runs a follow-up round
 * (pull request source → sandbox → scripted model → verify → follow-up publisher) → a second commit
 * on the same branch, the Rounds table, a reply on the comment thread, a new human review check run;
 * then the review gate on the new head (approvals, a person's push, a dismissed approval).
 *
 * Needs Redis on 127.0.0.1:6379, bubblewrap, git and python3 with pytest.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HUMAN_REVIEW_CHECK_NAME } from '../../src/github-app/check-run.js';
import { FOLLOW_UP_STATUS_MARKER, STATUS_MARKER } from '../../src/github-app/status-comment.js';
import { BRANCH_MOVED_REASON } from '../../src/git/push-branch.js';
import { TESTS_MODIFIED_LABEL } from '../../src/pipeline/verification/test-tampering.js';
import { startE2eStack, type E2eStack } from '../helpers/e2e-stack.js';
import type { RecordedRequest, ScriptedTurn } from '../helpers/scripted-model-server.js';
import { waitFor } from '../integration/queue/redis-helper.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const FILES = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
};
const ISSUE = { title: 'add() returns the difference', body: 'add(2, 3) returns -1 instead of 5.' };
const INLINE = 'Please give add() a docstring.';
const HUNK = '@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b';
const DOCSTRING = '    """Return the sum of a and b."""\n';

const textOf = (request: RecordedRequest): string => JSON.stringify(request.body.messages);

/**
 * The model's turns: the first run fixes the bug; a follow-up round (its instruction holds the
 * inline comment) adds the docstring. Chosen by how many assistant messages the request holds.
 */
function turnFor(request: RecordedRequest): ScriptedTurn {
  const done = (request.body.messages as Array<{ role: string }>).filter(
    (m) => m.role === 'assistant',
  ).length;
  const followUp = textOf(request).includes(INLINE);
  if (done === 0)
    return { kind: 'tool_calls', calls: [{ name: 'Read', arguments: { file_path: 'calc.py' } }] };
  if (done === 1) {
    const edit = followUp
      ? { old_string: 'def add(a, b):\n', new_string: `def add(a, b):\n${DOCSTRING}` }
      : { old_string: 'a - b', new_string: 'a + b' };
    return { kind: 'tool_calls', calls: [{ name: 'Edit', arguments: { file_path: 'calc.py', ...edit } }] };
  }
  return { kind: 'final', content: followUp ? 'Added the docstring.' : 'add() now returns a + b.' };
}

let stack: E2eStack | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
});

/** serve + worker on `octo-org/calc` with `script`; closed after the test. */
async function start(
  name: string,
  script: (request: RecordedRequest) => ScriptedTurn,
  files: Record<string, string> = FILES,
): Promise<E2eStack> {
  stack = await startE2eStack({ name, owner: OWNER, repos: { [REPO]: files }, script });
  return stack;
}

/**
 * Round 1 (alice labels the issue → draft pull request), then alice's `changes_requested` review
 * with one inline comment on calc.py, delivered to serve.
 */
async function openAndRequestChanges(s: E2eStack) {
  const { ghe, serve } = s;
  const issue = await s.labelNewIssue(REPO, ISSUE);
  expect(issue.status).toBe(200);
  const branch = `frognano/issue-${issue.number}`;
  await waitFor(
    () =>
      ghe.state
        .comments(OWNER, REPO, issue.number)
        .some(
          (c) =>
            (c.body ?? '').includes(STATUS_MARKER) && (c.body ?? '').includes('opened draft pull request #'),
        ),
    'the first run to open the pull request',
    90_000,
  );
  const pr = ghe.state.pulls(OWNER, REPO).find((p) => p.head.ref === branch)!;
  const first = (await ghe.readBranch(OWNER, REPO, branch))!;
  const requestsBefore = s.model.requests.length;

  const review = ghe.submitReview({
    owner: OWNER,
    repo: REPO,
    pullNumber: pr.number,
    reviewer: 'alice',
    state: 'changes_requested',
    body: 'One thing.',
  });
  const commentId = ghe.addReviewComment(OWNER, REPO, pr.number, {
    reviewId: (review.review as { id: number }).id,
    user: 'alice',
    body: INLINE,
    path: 'calc.py',
    line: 2,
    diffHunk: HUNK,
  });
  expect((await ghe.sendWebhook(serve.webhookUrl, 'pull_request_review', review)).status).toBe(200);
  await serve.intake.idle();
  return { branch, pr, first, commentId, requestsBefore };
}

/** The app's status comment on the pull request once its text matches `pattern`. */
function pullStatus(s: E2eStack, pullNumber: number, pattern: RegExp) {
  return waitFor(
    () =>
      s.ghe.state
        .comments(OWNER, REPO, pullNumber)
        .find((c) => (c.body ?? '').includes(FOLLOW_UP_STATUS_MARKER) && pattern.test(c.body ?? '')),
    `the pull request status comment to match ${pattern}`,
    60_000,
  );
}

describe('e2e: review feedback → follow-up round → review gate', () => {
  it('answers a changes_requested review with a second commit, a Rounds table, a reply and a new check run that the gate then keeps', async () => {
    const s = await start('e2e-review', turnFor);
    const { ghe, serve } = s;
    const { branch, pr, first, commentId, requestsBefore } = await openAndRequestChanges(s);

    // The follow-up round ends with a pushed commit on the same branch.
    const second = await waitFor(
      async () => {
        const head = await ghe.readBranch(OWNER, REPO, branch);
        return head !== first ? head : null;
      },
      'the follow-up round to push a second commit',
      90_000,
    );
    const [parent] = (await ghe.git(OWNER, REPO, 'log', '-1', '--format=%P', second!)).split('\n');
    expect(parent).toBe(first);
    expect(await ghe.readFile(OWNER, REPO, second!, 'calc.py')).toBe(
      `def add(a, b):\n${DOCSTRING}    return a + b\n`,
    );

    // The instruction the model got holds the comment's place, its hunk and the original issue.
    const instruction = textOf(s.model.requests[requestsBefore]!);
    expect(instruction).toContain(JSON.stringify(INLINE).slice(1, -1));
    expect(instruction).toContain('calc.py');
    expect(instruction).toContain(JSON.stringify(HUNK).slice(1, -1));
    expect(instruction).toContain(ISSUE.title);
    expect(instruction).toContain(ISSUE.body);

    // The pull request: a Rounds table with both rounds; a reply on the thread naming the commit.
    const status = await pullStatus(s, pr.number, /updated draft pull request/);
    expect(status.body).toContain(`updated draft pull request #${pr.number}`);
    const body = ghe.state.pull(OWNER, REPO, pr.number)?.body ?? '';
    const rounds = body.slice(body.indexOf('Rounds'));
    expect(rounds).toMatch(/\| 1 \|/);
    expect(rounds).toContain(`| 2 | @alice | One thing. · ${INLINE} |`);
    expect(rounds).toContain(second!.slice(0, 7));
    const replies = ghe.state.requestsTo(
      'POST',
      new RegExp(`/pulls/${pr.number}/comments/${commentId}/replies$`),
    );
    expect(replies).toHaveLength(1);
    expect(JSON.stringify(replies[0])).toContain(second!.slice(0, 7));

    // The human review check run on the new head.
    const checkOn = (sha: string) =>
      ghe.state
        .checkRuns(OWNER, REPO)
        .filter((r) => r.head_sha === sha && r.name === HUMAN_REVIEW_CHECK_NAME)
        .at(-1);
    const check = () => checkOn(second!);
    expect(check()).toMatchObject({ status: 'completed', conclusion: 'action_required' });
    expect(check()?.output.summary).toContain('other than @alice (who asked');
    expect(check()?.output.summary).not.toContain('@alice and @alice');
    // Its transcript holds both rounds.
    expect(check()?.output.text).toContain('### Round 1 — job `');
    expect(check()?.output.text).toContain('### Round 2 — job `');

    const requestsAfterRound = s.model.requests.length;

    // The gate on the new head: alice asked for both rounds, so her approval alone does not count…
    const deliver = async (event: string, payload: object) => {
      expect((await ghe.sendWebhook(serve.webhookUrl, event, payload)).status).toBe(200);
      await serve.intake.idle();
    };
    const approve = (reviewer: string) =>
      deliver(
        'pull_request_review',
        ghe.submitReview({ owner: OWNER, repo: REPO, pullNumber: pr.number, reviewer }),
      );
    await approve('alice');
    expect(check()).toMatchObject({ conclusion: 'action_required' });
    // …bob's (write access) does.
    ghe.setPermission(OWNER, REPO, 'bob', 'write');
    await approve('bob');
    expect(check()).toMatchObject({ conclusion: 'success' });
    expect(check()?.output.title).toBe('Approved by @bob');

    // A commit pushed by a person gets a new check run, waiting again.
    ghe.setPermission(OWNER, REPO, 'maya', 'write');
    const push = await ghe.pushToPullRequest({
      owner: OWNER,
      repo: REPO,
      pullNumber: pr.number,
      sender: 'maya',
      files: { 'README.md': 'calc\n' },
    });
    await deliver('pull_request', push);
    const third = String((push as { after: string }).after);
    expect(third).not.toBe(second);
    expect(checkOn(third)).toMatchObject({ conclusion: 'action_required' });
    expect(checkOn(third)?.output.summary).toContain('@bob approved an older commit');
    expect(checkOn(third)?.output.text).toContain('### Round 2 — job `');
    // bob approves the new head; the approval is dismissed: waiting again.
    await approve('bob');
    expect(checkOn(third)).toMatchObject({ conclusion: 'success' });
    const bobReview = ghe.state
      .reviews(OWNER, REPO, pr.number)
      .filter((r) => r.user?.login === 'bob')
      .at(-1)!;
    await deliver(
      'pull_request_review',
      ghe.dismissReview({
        owner: OWNER,
        repo: REPO,
        pullNumber: pr.number,
        reviewId: bobReview.id,
        sender: 'maya',
      }),
    );
    expect(checkOn(third)).toMatchObject({ conclusion: 'action_required' });
    expect(checkOn(third)?.output.summary).toContain('@bob had the review dismissed');

    // No further round ran (approvals and pushes are not feedback); the bot never approved or merged.
    await serve.intake.idle();
    expect(s.model.requests.length).toBe(requestsAfterRound);
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

  it('pushes nothing when a person pushed to the branch while the round ran, and says so', async () => {
    // The follow-up's Edit is held until the person's push is in.
    let held: () => void = () => undefined;
    const heldAtEdit = new Promise<void>((resolve) => (held = resolve));
    let release: () => void = () => undefined;
    const pushed = new Promise<void>((resolve) => (release = resolve));
    const s = await start('e2e-review-moved', (request) => {
      const turn = turnFor(request);
      if (turn.kind !== 'tool_calls' || turn.calls[0]?.name !== 'Edit' || !textOf(request).includes(INLINE))
        return turn;
      held();
      return { ...turn, after: pushed };
    });
    const { ghe, serve } = s;
    const { branch, pr, commentId } = await openAndRequestChanges(s);

    await heldAtEdit;
    ghe.setPermission(OWNER, REPO, 'maya', 'write');
    const push = await ghe.pushToPullRequest({
      owner: OWNER,
      repo: REPO,
      pullNumber: pr.number,
      sender: 'maya',
      files: { 'README.md': 'calc\n' },
    });
    expect((await ghe.sendWebhook(serve.webhookUrl, 'pull_request', push)).status).toBe(200);
    await serve.intake.idle();
    release();

    const status = await pullStatus(s, pr.number, /the branch changed while I was working/);
    expect(status.body).toContain(`nothing pushed: ${BRANCH_MOVED_REASON}`);
    // maya's commit is still the head; no reply, no round row, no check run from the bot on it.
    const maya = String((push as { after: string }).after);
    expect(await ghe.readBranch(OWNER, REPO, branch)).toBe(maya);
    expect(ghe.state.requestsTo('POST', new RegExp(`/comments/${commentId}/replies$`))).toEqual([]);
    expect(ghe.state.pull(OWNER, REPO, pr.number)?.body ?? '').not.toMatch(/^\| 2 \|/m);
    const onMaya = ghe.state
      .checkRuns(OWNER, REPO)
      .filter((r) => r.head_sha === maya && r.name === HUMAN_REVIEW_CHECK_NAME);
    expect(onMaya.map((r) => r.conclusion)).toEqual(['action_required']);
    expect(ghe.state.unhandled).toEqual([]);
    expect(ghe.state.errors).toEqual([]);
  });

  it('flags a follow-up that deletes a test file that is on the base, on the whole change', async () => {
    // Round 1 fixes add(); the follow-up round deletes a passing test file the base branch has.
    const files = { ...FILES, 'test_extra.py': 'def test_extra():\n    assert True\n' };
    const s = await start(
      'e2e-review-tamper',
      (request) => {
        if (!textOf(request).includes(INLINE)) return turnFor(request);
        const done = (request.body.messages as Array<{ role: string }>).filter(
          (m) => m.role === 'assistant',
        ).length;
        if (done > 0) return { kind: 'final', content: 'Removed the extra test.' };
        return { kind: 'tool_calls', calls: [{ name: 'Bash', arguments: { command: 'rm test_extra.py' } }] };
      },
      files,
    );
    const { ghe } = s;
    const { branch, pr, first } = await openAndRequestChanges(s);
    expect(ghe.state.labels(OWNER, REPO, pr.number)).not.toContain(TESTS_MODIFIED_LABEL);

    const second = await waitFor(
      async () => {
        const head = await ghe.readBranch(OWNER, REPO, branch);
        return head !== first ? head : null;
      },
      'the follow-up round to push a second commit',
      90_000,
    );
    await pullStatus(s, pr.number, /updated draft pull request/);
    expect(await ghe.git(OWNER, REPO, 'ls-tree', '--name-only', second!)).not.toContain('test_extra.py');
    // The evidence is of the whole change since the base: the deleted file is named and labelled.
    expect(ghe.state.labels(OWNER, REPO, pr.number)).toContain(TESTS_MODIFIED_LABEL);
    const body = ghe.state.pull(OWNER, REPO, pr.number)?.body ?? '';
    expect(body).toContain('test file `test_extra.py` deleted (2 lines)');
    expect(body).toContain('calc.py');
  });
});
