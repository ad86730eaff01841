import type { Logger } from '../../observability/logger.js';

/**
 * The names one candidate's things carry. With one candidate they are the job's own names (as
 * before best-of-N: the sandbox is `<jobId>`, the trajectory `trajectory.json`, the head test log
 * `tests-head`), so a single-candidate job looks as it always did in logs, stores and sandboxes.
 */
export interface CandidateNames {
  /** 1-based candidate number. */
  candidate: number;
  /** How many candidates the job runs. */
  of: number;
  sandboxId: string;
  /** Trajectory store name (`<name>.json`). */
  trajectoryName: string;
  /** Store name of the head test log, and the suffix of its sandbox id. */
  headName: string;
  logger: Logger;
}

/** The {@link CandidateNames} of candidate `candidate` of `of`. */
export function candidateNames(jobId: string, candidate: number, of: number, logger: Logger): CandidateNames {
  const single = of === 1;
  return {
    candidate,
    of,
    sandboxId: single ? jobId : `${jobId}-a${candidate}`,
    trajectoryName: single ? 'trajectory' : `candidate-${candidate}`,
    headName: single ? 'tests-head' : `tests-head-candidate-${candidate}`,
    logger: single ? logger : logger.child({ candidate }),
  };
}
