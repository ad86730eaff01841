import type { Readable } from 'node:stream';
import type { JobContext, JobPolicy } from '../job-context.js';

/**
 * A job's inputs once its source has prepared them: the policy, the base checkout in the job's
 * folder, and what the instruction and the publisher are built from.
 *
 * @typeParam T what the publisher of this source needs (the issue and repository for a pull
 *   request; nothing for a folder).
 */
export interface PreparedJob<T = unknown> {
  policy: JobPolicy;
  /**
   * The worker's own repository at the base commit, with a clean index: the sandboxes get copies of
   * its tracked files (never its `.git`), and patches are applied, checked and published here.
   */
  dir: string;
  /** The base commit (`git rev-parse HEAD` of `dir`). */
  baseSha: string;
  /**
   * The model's task (the issue quoted as data), given the test command the tests will run with
   * (`null` when none is configured or detected).
   */
  instruction(testCommand: string | null): string;
  /** What the publisher needs from the source. */
  target: T;
  /**
   * The tree each agent sandbox is seeded with (a tar stream like `archiveTrackedFiles`), when it
   * is not `dir`'s: a follow-up round gives the pull request head's tracked files while `dir`
   * stays at the base. Default: `archiveTrackedFiles(dir)`.
   */
  sandboxTree?: () => Readable;
  /**
   * The change to verify and publish, given the agent's patch (relative to the sandbox's tree):
   * for a follow-up round, the whole change since `baseSha` (`git diff --binary --full-index`
   * text: the head's change plus the agent's patch), so every check compares base → new head.
   * Default: the agent's patch itself. The trajectory keeps the agent's own patch.
   *
   * @throws AppError `PATCH_DOES_NOT_APPLY` when the patch does not apply to the sandbox's tree.
   */
  wholeChange?: (candidatePatch: string) => Promise<string>;
}

/**
 * Where a job's work comes from (DESIGN.md "prepare"): a GitHub issue and its clone, a local folder
 * or git URL with issue text, next a pull request's head with review feedback. `prepare` makes the
 * base checkout inside the job's workspace, resolves the policy, and may refuse (AppError
 * `POLICY_REFUSED`, `CONFIG_INVALID`…). Everything after it (candidates, verification, choice) is
 * the same for every source.
 */
export interface JobSource<T = unknown> {
  /** @param workspace the job's own, empty folder (removed at the end): the checkout goes inside it. */
  prepare(ctx: JobContext, workspace: string): Promise<PreparedJob<T>>;
}
