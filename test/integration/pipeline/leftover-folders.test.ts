import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepLeftoverFolders } from '../../../src/pipeline/run-job.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import {
  fixingScript,
  leftovers,
  OWNER,
  REPO,
  startPipelineFixture,
  type PipelineFixture,
} from './pipeline-fixture.js';

// Issue 12 item 6: the folders a killed run leaves (its clone in WORK_DIR, its sandbox folders)
// are removed when the job runs again, and at worker start for jobs that are not active.

let fx: PipelineFixture;

beforeAll(async () => {
  fx = await startPipelineFixture();
});

afterAll(async () => {
  await fx?.close();
});

/** The pid of a process that has exited: the owner of a killed run's folders. */
const deadPid = spawnSync('true').pid;

/** A folder with a file in it, as a killed run leaves it (its owner process is gone). */
async function leave(dir: string, name: string, owner: number = deadPid): Promise<void> {
  await mkdir(join(dir, name, 'repo'), { recursive: true });
  await writeFile(join(dir, name, 'repo', 'calc.py'), 'left behind\n');
  await writeFile(join(dir, name, 'owner.pid'), `${owner}\n`);
}

describe('folders of killed runs', () => {
  it('a job removes the clone and sandbox folders of its earlier runs, and nothing else', async () => {
    const data = fx.openIssue('add() subtracts', 'add(2, 3) gives -1');
    const jobId = `${OWNER}.${REPO}.${data.issueNumber}.${data.deliveryId}`;
    await leave(fx.workDir, `${jobId}-Ab12Cd`);
    await leave(fx.sandboxRoot, `frognano-${jobId}-Zz9yX8`);
    await leave(fx.sandboxRoot, `frognano-${jobId}-tests-base-Qq1wE2`);
    // Another job's folders and a folder that is not a job's stay.
    await leave(fx.workDir, `${OWNER}.${REPO}.9999.delivery-x-Ab12Cd`);
    await leave(fx.sandboxRoot, `frognano-${OWNER}.${REPO}.9999.delivery-x-Ab12Cd`);
    await leave(fx.sandboxRoot, 'frognano-e2e-something-Ab12Cd');

    const { outcome } = await fx.run(data, fixingScript());
    expect(outcome.kind).toBe('pr_opened');
    expect((await leftovers(fx.workDir)).sort()).toEqual([`${OWNER}.${REPO}.9999.delivery-x-Ab12Cd`]);
    expect((await leftovers(fx.sandboxRoot)).sort()).toEqual([
      'frognano-e2e-something-Ab12Cd',
      `frognano-${OWNER}.${REPO}.9999.delivery-x-Ab12Cd`,
    ]);
  });

  it('at worker start, removes the folders of jobs that are not active and keeps the active ones', async () => {
    const active = `${OWNER}.${REPO}.7.delivery-active`;
    const dead = `${OWNER}.${REPO}.8.delivery-dead`;
    await leave(fx.workDir, `${active}-Aa11Bb`);
    await leave(fx.workDir, `${dead}-Cc22Dd`);
    await leave(fx.sandboxRoot, `frognano-${active}-a2-Ee33Ff`);
    await leave(fx.sandboxRoot, `frognano-${dead}-tests-head-Gg44Hh`);
    // A folder of a job of another queue, whose process still runs (here: pid 1), stays.
    await leave(fx.sandboxRoot, `frognano-${OWNER}.${REPO}.5.delivery-elsewhere-Ii55Jj`, 1);
    const removed = await sweepLeftoverFolders({
      workDir: fx.workDir,
      sandboxFactory: createLocalSandboxFactory({ workRoot: fx.sandboxRoot }),
      activeJobIds: [active],
    });
    // The dead job's folders and those of the other job of the first test (not active either).
    const other = `${OWNER}.${REPO}.9999.delivery-x-Ab12Cd`;
    expect(removed.sort()).toEqual(
      [
        join(fx.workDir, `${dead}-Cc22Dd`),
        join(fx.workDir, other),
        join(fx.sandboxRoot, `frognano-${dead}-tests-head-Gg44Hh`),
        join(fx.sandboxRoot, `frognano-${other}`),
      ].sort(),
    );
    expect(await leftovers(fx.workDir)).toContain(`${active}-Aa11Bb`);
    expect(await leftovers(fx.sandboxRoot)).toContain(`frognano-${active}-a2-Ee33Ff`);
    expect(await leftovers(fx.sandboxRoot)).toContain('frognano-e2e-something-Ab12Cd');
    expect(await leftovers(fx.sandboxRoot)).toContain(
      `frognano-${OWNER}.${REPO}.5.delivery-elsewhere-Ii55Jj`,
    );
  });
});
