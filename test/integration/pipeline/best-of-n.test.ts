import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSglangClient } from '../../../src/llm/sglang-client.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { bestOfN, runJob } from '../../../src/pipeline/run-job.js';
import type { JobData } from '../../../src/queue/job-data.js';
import {
  startScriptedModelServer,
  type RecordedRequest,
  type ScriptedTurn,
} from '../../helpers/scripted-model-server.js';
import {
  fixingScript,
  leftovers,
  OWNER,
  REPO,
  startPipelineFixture,
  type PipelineFixture,
} from './pipeline-fixture.js';

/**
 * Best-of-N in `runJob` when attempts go wrong: a failed attempt next to a good one, and no attempt
 * that can be published. (The happy path, with the table and the attempts list, is in
 * test/e2e/trustworthy-patches.test.ts.)
 */

let fx: PipelineFixture;
const logger = createSilentLogger();

beforeAll(async () => {
  fx = await startPipelineFixture();
});

afterAll(async () => {
  await fx?.close();
});

/** Run a job with `attempts` attempts; `scripts[n-1]` answers attempt n (told apart by the API key). */
async function runAttempts(data: JobData, scripts: ScriptedTurn[][]): Promise<Outcome> {
  const turnFor = (req: RecordedRequest): ScriptedTurn => {
    const attempt = Number(/attempt-(\d+)/.exec(String(req.headers.authorization))?.[1] ?? 1);
    const script = scripts[attempt - 1] ?? [];
    const done = (req.body.messages as Array<{ role: string }>).filter((m) => m.role === 'assistant').length;
    return script[Math.min(done, script.length - 1)] as ScriptedTurn;
  };
  const model = await startScriptedModelServer({ script: turnFor });
  try {
    const deps = fx.deps(model, { candidates: scripts.length, sources: { candidates: 'policy:defaults' } });
    return await runJob(
      data,
      {
        ...deps,
        createModel: ({ candidate: attempt }) =>
          createSglangClient({
            baseURL: model.url,
            model: 'm',
            apiKey: `attempt-${attempt}`,
            maxRetries: 0,
            logger,
          }),
      },
      {
        signal: new AbortController().signal,
        logger,
        jobId: `${OWNER}.${data.repo}.${data.issueNumber}.${data.deliveryId}`,
        progress: async () => undefined,
      },
    );
  } finally {
    await model.close();
  }
}

describe('best-of-N', () => {
  it('publishes the good attempt when another one fails, and lists the failure', async () => {
    const data = fx.openIssue('add() subtracts (two attempts)', 'add(2, 3) gives -1');
    const outcome = await runAttempts(data, [
      [{ kind: 'http_error', status: 500, body: { object: 'error', message: 'boom', code: 500 } }],
      fixingScript('fixed'),
    ]);
    expect(outcome.kind).toBe('pr_opened');
    if (outcome.kind !== 'pr_opened') return;
    expect(outcome.summary.candidate).toEqual({ number: 2, of: 2 });
    const body = fx.ghe.state.pull(OWNER, REPO, outcome.pullNumber)?.body ?? '';
    expect(body).toContain(
      'Candidate 2 was chosen: it is the only one of 2 candidates whose change passed the checks and could be tested.',
    );
    expect(body).toMatch(/\| 1 \| failed: .+\|/);
    expect(body).toContain('| 2 | **chosen** — 1 fixed, 0 broken, 0 still failing; 2 lines in 1 file |');
    const jobDir = join(fx.trajectoryDir, `${OWNER}.${REPO}.${data.issueNumber}.${data.deliveryId}`);
    expect((await readdir(jobDir)).sort()).toEqual(
      [
        'candidate-1.json',
        'candidate-2.json',
        'candidates.json',
        'tests-base.log',
        'tests-head-candidate-2.log',
        'trajectory.json',
      ].sort(),
    );
    expect(await leftovers(fx.sandboxRoot)).toEqual([]);
    expect(await leftovers(fx.workDir)).toEqual([]);
  });

  it('ends as refused, listing every attempt, when no attempt can be published and one was refused', async () => {
    const data = fx.openIssue('add() subtracts (refused)', 'add(2, 3) gives -1');
    const key = '-----BEGIN ' + 'EC PRIVATE KEY-----';
    const outcome = await runAttempts(data, [
      [
        {
          kind: 'tool_calls',
          calls: [{ name: 'Write', arguments: { file_path: 'id_ec', content: `${key}\n` } }],
        },
        { kind: 'final', content: 'added a key' },
      ],
      [{ kind: 'final', content: 'nothing to do' }],
    ]);
    expect(outcome).toMatchObject({
      kind: 'refused',
      stage: 'patch',
      reason: expect.stringContaining(
        'None of the 2 candidates can be published. Candidate 1: The change adds what looks like a secret',
      ),
      details: [
        expect.stringMatching(
          /^Candidate 1: refused: .*Line 1 of `id_ec` adds what looks like a private key/,
        ),
        'Candidate 2: no change',
      ],
    });
    expect(JSON.stringify(outcome)).not.toContain('PRIVATE KEY-----');
    expect(await fx.ghe.readBranch(OWNER, REPO, `frognano/issue-${data.issueNumber}`)).toBeNull();
    expect(await leftovers(fx.sandboxRoot)).toEqual([]);
  });
});

describe('bestOfN', () => {
  it('runs the attempts of the policy, at least one', () => {
    expect(bestOfN({})).toBe(1);
    expect(bestOfN({ candidates: 1 })).toBe(1);
    expect(bestOfN({ candidates: 3 })).toBe(3);
    expect(bestOfN({ candidates: 2.7 })).toBe(2);
  });
});
