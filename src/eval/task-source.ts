import { join } from 'node:path';
import { BUILT_IN_DEFAULTS } from '../config/policy.js';
import { runGit } from '../git/run-git.js';
import type { JobPolicy } from '../pipeline/job-context.js';
import type { JobSource } from '../pipeline/sources/job-source.js';
import { buildLocalInstruction } from '../pipeline/sources/local-source.js';
import type { EvalRunOptions } from './eval-run.js';
import { cloneSource, type RepoLocation } from './resolve-repo.js';
import type { SweBenchTask } from './swe-bench-task.js';
import { cloneAtCommit } from './task-workspace.js';

/**
 * What the results publisher learns from the task source: where to clone the task's repository
 * again for grading. Deliberately not the task: its hidden `test_patch` stays with the publisher.
 */
export interface TaskTarget {
  instanceId: string;
  /** A local path or clone URL (`cloneSource` of the resolved location). */
  repoSource: string;
  baseCommit: string;
}

/**
 * The job policy of every task of an evaluation: the built-in defaults with the evaluation's limits
 * (command line > admin policy `eval` section > built-in, resolved by `parseEvalRunOptions`), its
 * number of candidates, and its test and setup commands (`null` = detected).
 */
export function evalJobPolicy(
  options: Pick<EvalRunOptions, 'candidates' | 'maxSteps' | 'maxTimeSec' | 'testCommand' | 'setupCommand'>,
): JobPolicy {
  return {
    ...BUILT_IN_DEFAULTS,
    maxSteps: options.maxSteps,
    maxTimeSec: options.maxTimeSec,
    candidates: options.candidates,
    testCommand: options.testCommand,
    setupCommand: options.setupCommand,
  };
}

/**
 * The source of one SWE-bench instance: the task's repository cloned at `base_commit` into the
 * job's workspace (no hooks, `--template=`; no remote; only its tracked files ever reach a sandbox,
 * never its `.git` and so never its later history), and `problem_statement` as the issue text,
 * quoted as data like a local run's. The hidden `test_patch`, the gold `patch` and the test lists
 * are not used here: the agent never sees them.
 *
 * @throws (from `prepare`) AppError `GIT_FAILED` when the repository does not clone or has no
 *   `base_commit`; `CANCELLED`.
 */
export function createTaskSource(input: {
  task: SweBenchTask;
  location: RepoLocation;
  policy: JobPolicy;
}): JobSource<TaskTarget> {
  const { task, location, policy } = input;
  return {
    async prepare(ctx, workspace) {
      const dir = join(workspace, 'repo');
      const repoSource = cloneSource(location);
      await cloneAtCommit(repoSource, task.base_commit, dir, { signal: ctx.signal });
      const baseSha = (await runGit(['rev-parse', 'HEAD'], { cwd: dir })).stdout.toString('utf8').trim();
      ctx.logger.info({ instanceId: task.instance_id, baseSha }, 'task checkout prepared');
      return {
        policy,
        dir,
        baseSha,
        instruction: () => buildLocalInstruction(task.problem_statement),
        target: { instanceId: task.instance_id, repoSource, baseCommit: baseSha },
      };
    },
  };
}
