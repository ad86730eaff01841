import type { JobContext } from '../job-context.js';
import type { Outcome } from '../outcome.js';
import type { JobPublisher } from '../publishers/job-publisher.js';
import type { PreparedJob } from '../sources/job-source.js';
import type { CandidateChoice } from '../verification/choose-candidate.js';
import { testVerdict } from '../verification/evidence-markdown.js';
import type { ChosenCandidate } from './choose-candidate.js';

/**
 * Step 5 of the chain: note the chosen patch for the run record, complete its summary with the
 * diffstat and the test result (and the base → head verdict), and hand it to the publisher.
 */
export async function publish<T>(
  ctx: JobContext,
  job: PreparedJob<T>,
  chosen: ChosenCandidate,
  choice: CandidateChoice,
  publisher: JobPublisher<T>,
): Promise<Outcome> {
  const { verified, patch, summary } = chosen;
  ctx.onFacts({ verified, patch });
  summary.diffstat = verified.diffstat;
  const tests = verified.tests;
  if (tests) {
    summary.tests = {
      command: tests.command,
      exitCode: tests.exitCode,
      passed: tests.passed,
      outputTail: tests.outputTail,
      timedOut: tests.timedOut,
      ...(verified.comparison ? { verdict: testVerdict(verified.comparison) } : {}),
    };
  }
  return publisher.publish(ctx, job, chosen, choice);
}
