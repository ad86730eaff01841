/**
 * End to end, the run record: a labelled issue → draft pull request → approval, through the real
 * serve and worker, with the record in the volume store and — in a second run — in a real
 * S3-protocol server (s3rver on loopback). The record's fields are checked against what the
 * stand-ins answered; `frognano-bot audit verify` is run as a process against the stored files,
 * edited, deleted and swept; a process with a clean local disk prints the trajectory; and a store
 * that is down leaves the job's outcome alone, says "pending", and gets the record when it is back.
 *
 * Needs Redis on 127.0.0.1:6379 (`bash scripts/setup.sh`), bubblewrap, git and python3 with pytest.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HUMAN_REVIEW_CHECK_NAME, parseCheckExternalId } from '../../src/github-app/check-run.js';
import { STATUS_MARKER } from '../../src/github-app/status-comment.js';
import { readJobEntries } from '../../src/observability/record-chain.js';
import { createVolumeRecordStore, type RecordStore } from '../../src/observability/record-store.js';
import { createS3RecordStore } from '../../src/observability/s3-record-store.js';
import { approvalSchema, runRecordSchema } from '../../src/observability/run-record.js';
import { startE2eStack, type E2eStack } from '../helpers/e2e-stack.js';
import type { GheStandin } from '../helpers/ghe-standin/index.js';
import type { RecordedRequest, ScriptedTurn } from '../helpers/scripted-model-server.js';
import { startTestS3Server, type TestS3Server } from '../helpers/s3-server.js';
import { waitFor } from '../integration/queue/redis-helper.js';

const OWNER = 'octo-org';
const REPO = 'calc';
const FILES = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
};
const ROOT = join(import.meta.dirname, '..', '..');

function turnFor(request: RecordedRequest): ScriptedTurn {
  const done = (request.body.messages as Array<{ role: string }>).filter(
    (m) => m.role === 'assistant',
  ).length;
  if (done === 0)
    return { kind: 'tool_calls', calls: [{ name: 'Read', arguments: { file_path: 'calc.py' } }] };
  if (done === 1)
    return {
      kind: 'tool_calls',
      calls: [
        { name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a + b' } },
      ],
    };
  return { kind: 'final', content: 'add() now adds.' };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** Run `frognano-bot <args>` as a process; resolves to its exit code and output. */
function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

function statusComment(ghe: GheStandin, issueNumber: number) {
  return ghe.state
    .comments(OWNER, REPO, issueNumber)
    .find((c) => c.user?.login === ghe.botLogin && (c.body ?? '').includes(STATUS_MARKER));
}

async function startStack(name: string, env: Record<string, string> = {}): Promise<E2eStack> {
  const stack = await startE2eStack({ name, owner: OWNER, repos: { [REPO]: FILES }, script: turnFor, env });
  cleanups.push(() => stack.close());
  // maintain: the API answers permission "write", role_name "maintain" — the record must keep both.
  stack.ghe.setPermission(OWNER, REPO, 'alice', 'maintain');
  // The approver: a second person (alice asked for the run, so her approval alone does not count).
  stack.ghe.setPermission(OWNER, REPO, 'maya', 'maintain');
  return stack;
}

/**
 * Label an issue (as alice), wait for the pull request, approve its head commit as maya; returns the job id
 * (from the check run's external_id), the pull request and the head commit.
 */
async function labelAndApprove(stack: E2eStack, title: string) {
  const { ghe, serve } = stack;
  const issue = await stack.labelNewIssue(REPO, { title, body: 'add(2, 3) returns -1 instead of 5.' });
  const labelDelivery = ghe.state.deliveries.at(-1)!.deliveryId;
  const final = await waitFor(
    () => {
      const c = statusComment(ghe, issue.number);
      return c && (c.body ?? '').includes('opened draft pull request #') ? c : undefined;
    },
    'the status comment to announce the pull request',
    90_000,
  );
  const pr = ghe.state.pulls(OWNER, REPO).find((p) => p.head.ref === `frognano/issue-${issue.number}`)!;
  const head = pr.head.sha;
  const check = ghe.state
    .checkRuns(OWNER, REPO)
    .find((r) => r.head_sha === head && r.name === HUMAN_REVIEW_CHECK_NAME)!;
  const jobId = parseCheckExternalId((check as { external_id?: string | null }).external_id).jobId ?? '';
  expect(jobId).toMatch(/^octo-org\.calc\.\d+\./);
  const review = ghe.submitReview({ owner: OWNER, repo: REPO, pullNumber: pr.number, reviewer: 'maya' });
  expect((await ghe.sendWebhook(serve.webhookUrl, 'pull_request_review', review)).status).toBe(200);
  const reviewDelivery = ghe.state.deliveries.at(-1)!.deliveryId;
  return { issue, final, pr, head, check, jobId, labelDelivery, reviewDelivery };
}

/** Every field of the record that the stand-ins let the test know. */
async function checkRecord(
  stack: E2eStack,
  store: RecordStore,
  run: Awaited<ReturnType<typeof labelAndApprove>>,
) {
  const { ghe } = stack;
  const entries = await waitFor(
    async () => {
      const e = await readJobEntries(store, run.jobId);
      return e.some((x) => x.entry.kind === 'approval') ? e : undefined;
    },
    'the record and the approval in the store',
    30_000,
  );
  expect(entries.map((e) => [e.entry.kind, e.linked])).toEqual([
    ['record', true],
    ['approval', true],
  ]);
  const record = runRecordSchema.parse(entries[0]!.entry.body);
  expect(record).toMatchObject({
    jobId: run.jobId,
    repository: `${OWNER}/${REPO}`,
    issueNumber: run.issue.number,
    trigger: {
      login: 'alice',
      deliveryId: run.labelDelivery,
      label: 'frognano',
      permission: { permission: 'write', roleName: 'maintain' },
    },
    model: {
      name: 'microsoft/FrogNano-4B-2609',
      url: stack.model.url,
      servedEntry: { id: 'microsoft/FrogNano-4B-2609', object: 'model', owned_by: 'sglang' },
      modelInfo: { model_path: 'microsoft/FrogNano-4B-2609', is_generation: true },
    },
    outcome: { kind: 'pr_opened' },
    pullRequest: { number: run.pr.number, url: run.pr.html_url, checkRunId: run.check.id },
  });
  expect(record.protocol.sha256).toBe(sha256(await readFile(join(ROOT, 'src/protocol/protocol.json'))));
  expect(record.policy?.sha256).toMatch(/^[0-9a-f]{64}$/);
  expect(record.policy?.effective).toMatchObject({ maxSteps: 150, repo: `${OWNER}/${REPO}` });
  expect(record.instruction?.sha256).toMatch(/^[0-9a-f]{64}$/);
  // The instruction hashed is the user message the model server received.
  const firstRequest = stack.model.requests.find((r) =>
    JSON.stringify(r.body.messages).includes(`#${run.issue.number}`),
  );
  const userMessage = (firstRequest?.body.messages as Array<{ role: string; content: string }>).find(
    (m) => m.role === 'user',
  );
  expect(record.instruction?.sha256).toBe(sha256(userMessage!.content));
  // The pushed commit: its full-index diff against the base hashes to what the record says.
  const parent = (await ghe.git(OWNER, REPO, 'rev-parse', `${run.head}^`)).trim();
  const diff = await ghe.git(OWNER, REPO, 'diff', '--binary', '--full-index', parent, run.head);
  expect(record.change).toMatchObject({
    baseSha: parent,
    commit: { sha: run.head, diffSha256: sha256(diff) },
    diffstat: expect.stringContaining('calc.py'),
  });
  // The patch file in the store is what the patch hash covers, and it is the pushed change.
  const patchFile = record.files.find((f) => f.name === 'patch.diff')!;
  const patch = (await store.get(patchFile.key))!;
  expect(sha256(patch)).toBe(record.change?.patchSha256);
  expect(patch.toString()).toContain('+    return a + b');
  // Tests on base (failing) and head (passing), compared per test.
  expect(record.tests?.base).toMatchObject({ command: 'python3 -m pytest -q', passed: false });
  expect(record.tests?.head).toMatchObject({ command: 'python3 -m pytest -q', passed: true });
  expect(record.tests?.comparison).toMatchObject({
    fixed: [expect.stringContaining('test_add')],
    broken: [],
  });
  // Trajectory and test logs are in the store, hashed.
  const names = record.files.map((f) => f.name);
  expect(names).toEqual(expect.arrayContaining(['tests-base.log', 'tests-head.log']));
  expect(names.some((n) => n.startsWith('trajectory'))).toBe(true);
  for (const f of record.files) expect(sha256((await store.get(f.key))!)).toBe(f.sha256);
  // The approval: who, which commit, the permission the API answered.
  const approval = approvalSchema.parse(entries[1]!.entry.body);
  expect(approval).toMatchObject({
    reviewer: 'maya',
    commit: run.head,
    pullNumber: run.pr.number,
    permission: 'write',
    roleName: 'maintain',
    checkRunId: run.check.id,
    deliveryId: run.reviewDelivery,
  });
  // Findable: status comment, pull request body and check run name the job and the command.
  const command = `frognano-bot audit show ${run.jobId}`;
  expect(run.final.body).toContain(`Run record: \`${command}\``);
  expect(ghe.state.pull(OWNER, REPO, run.pr.number)?.body).toContain(command);
  expect(run.check.output.summary).toContain(command);
  return { record, entries };
}

describe('e2e: run record', () => {
  it('volume store: the record of a labelled issue → pull request → approval; audit verify catches an edit and a removal; a sweep is listed; any process prints the trajectory', async () => {
    const stack = await startStack('record-volume');
    const run = await labelAndApprove(stack, 'add() returns the difference');
    const store = createVolumeRecordStore({ dir: stack.recordDir });
    const { entries } = await checkRecord(stack, store, run);
    const cliEnv = {
      RECORD_STORE: 'volume',
      RECORD_DIR: stack.recordDir,
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: stack.prefix,
    };

    // audit show prints who, model, policy, outcome, tests and the approval.
    const shown = await cli(['audit', 'show', run.jobId], cliEnv);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`Run record of job ${run.jobId}`);
    expect(shown.stdout).toMatch(/Asked by\s+@alice, who added the label `frognano` — permission maintain/);
    expect(shown.stdout).toContain('microsoft/FrogNano-4B-2609');
    expect(shown.stdout).toMatch(/Outcome\s+pr_opened/);
    expect(shown.stdout).toMatch(/fixed: .*test_add/);
    expect(shown.stdout).toContain(
      `@maya (maintain) approved commit ${run.head.slice(0, 12)} of #${run.pr.number}`,
    );
    const json = JSON.parse((await cli(['audit', 'show', run.jobId, '--json'], cliEnv)).stdout) as {
      entries: unknown[];
    };
    expect(json.entries).toHaveLength(2);

    // verify passes…
    const ok = await cli(['audit', 'verify'], cliEnv);
    expect(ok.stdout).toContain('✓ octo-org/calc: intact, 2 entries checked');
    expect(ok.code).toBe(0);
    // …fails naming the job when its record file is edited…
    const recordPath = join(stack.recordDir, ...entries[0]!.key.split('/'));
    const original = await readFile(recordPath, 'utf8');
    await writeFile(recordPath, original.replace('"login": "alice"', '"login": "mallory"'));
    const edited = await cli(['audit', 'verify', '--repo', 'octo-org/calc'], cliEnv);
    expect(edited.code).toBe(1);
    expect(edited.stdout).toContain(`BROKEN at entry 0 (job ${run.jobId})`);
    expect(edited.stdout).toMatch(/changed after it was written/);
    // …and when it is deleted.
    await rm(recordPath);
    const deleted = await cli(['audit', 'verify'], cliEnv);
    expect(deleted.code).toBe(1);
    expect(deleted.stdout).toContain(`BROKEN at entry 0 (job ${run.jobId})`);
    expect(deleted.stdout).toMatch(/missing \(removed\)/);
    await writeFile(recordPath, original);

    // A process with a clean local disk prints the trajectory from the store.
    const cleanDisk = await mkdtemp(join(tmpdir(), 'frognano-clean-'));
    cleanups.push(() => rm(cleanDisk, { recursive: true, force: true }));
    const traj = await cli(['trajectory', run.jobId], { ...cliEnv, TRAJECTORY_DIR: cleanDisk });
    expect(traj.stderr).toBe('');
    expect(traj.code).toBe(0);
    expect(traj.stdout).toContain('Edit');
    expect(traj.stdout).toContain('a + b');

    // A retention sweep removes the job and chains a sweep entry; verify passes and lists it.
    await new Promise((r) => setTimeout(r, 1200));
    const swept = await cli(['audit', 'sweep', '--retention-days', '0.00001'], cliEnv);
    expect(swept.stdout).toContain('octo-org/calc: removed 2 entries and 1 job folders');
    expect(swept.code).toBe(0);
    expect(await store.list(`jobs/${run.jobId}/`)).toEqual([]);
    const after = await cli(['audit', 'verify'], cliEnv);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('✓ octo-org/calc: intact');
    expect(after.stdout).toMatch(/retention sweep, entry 2 at .*: removed 2 entries/);
  }, 180_000);

  it('S3 store: the record lands in the bucket; with the store down the job keeps its outcome, the comment says pending, and the record arrives when it is back', async () => {
    const s3: TestS3Server = await startTestS3Server();
    cleanups.push(() => s3.close());
    const stack = await startStack('record-s3', s3.env);
    const store = createS3RecordStore({
      bucket: s3.bucket,
      endpoint: s3.endpoint,
      credentials: s3.credentials,
      forcePathStyle: true,
    });
    cleanups.push(async () => store.close());
    const run = await labelAndApprove(stack, 'add() returns the difference');
    await checkRecord(stack, store, run);
    const cliEnv = { ...s3.env, REDIS_URL: 'redis://127.0.0.1:6379', QUEUE_PREFIX: stack.prefix };
    const ok = await cli(['audit', 'verify'], cliEnv);
    expect(ok.stdout).toContain('✓ octo-org/calc: intact, 2 entries checked');

    // The store goes down: the next job still opens its pull request; the comment says pending.
    await s3.stop();
    const issue = await stack.labelNewIssue(REPO, { title: 'add() again', body: 'add(2, 3) != 5' });
    const final = await waitFor(
      () => {
        const c = statusComment(stack.ghe, issue.number);
        return c && /Run record: \*\*pending\*\*/.test(c.body ?? '') ? c : undefined;
      },
      'the status comment to say the record is pending',
      120_000,
    );
    expect(final.body).toContain('opened draft pull request #');
    const jobId = /audit show ([^`)]+)/.exec(final.body ?? '')?.[1] ?? '';
    expect(jobId).toMatch(/^octo-org\.calc\.\d+\./);
    // Back: the worker's retry stores it, chained after the first job's entries.
    await s3.start();
    const entries = await waitFor(
      async () => {
        const e = await readJobEntries(store, jobId).catch(() => []);
        return e.length > 0 ? e : undefined;
      },
      'the pending record to reach the store',
      30_000,
    );
    expect(entries[0]?.entry).toMatchObject({ kind: 'record', seq: 2 });
    expect(runRecordSchema.parse(entries[0]!.entry.body).outcome.kind).toBe('pr_opened');
    const after = await cli(['audit', 'verify'], cliEnv);
    expect(after.stdout).toContain('✓ octo-org/calc: intact, 3 entries checked');
    expect(after.code).toBe(0);
  }, 240_000);
});
