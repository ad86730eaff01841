import type { JobQueue } from '../queue/job-queue.js';
import type { ServeMetrics } from '../observability/metrics.js';
import type { Logger } from '../observability/logger.js';
import type { GitHubRequester } from './github-client.js';
import type { TriggerCheck } from './trigger-rules.js';

/**
 * One webhook delivery as the handlers see it: Probot's `Context` reduced to what they use, so the
 * handlers can be called without Probot in unit tests.
 */
export interface WebhookInput {
  /** `X-GitHub-Delivery` (a GUID; the same on a redelivery). */
  deliveryId: string;
  /** `X-GitHub-Event`, e.g. `issues`. */
  event: string;
  /** The parsed JSON body (signature already verified). Outside data: handlers check it with zod. */
  payload: unknown;
  /** Installation-authenticated client of the payload's installation. */
  octokit: GitHubRequester;
  logger: Logger;
}

/** What the webhook handlers need. */
export interface WebhookDeps {
  jobs: JobQueue;
  /** Trigger label of a repository (`owner/name`); default: TRIGGER_LABEL for every repository. */
  triggerLabel: (repo: string) => string;
  /** The app's bot login (`<slug>[bot]`) when known: its own events are ignored, its comments found. */
  botLogin: () => string | undefined;
  /** The admin policy's check (allowed repositories and teams). Absent: everyone with write access. */
  checkTriggerAllowed?: TriggerCheck;
  /** BullMQ `attempts` for a repository's jobs (admin policy); absent: the queue default. */
  attemptsFor?: (repo: string) => number;
  /** Admin policy `maxFollowUps` of a repository (follow-up rounds per pull request); absent: 3. */
  maxFollowUpsFor?: (repo: string) => number;
  metrics?: ServeMetrics;
  logger: Logger;
  now?: () => Date;
}

/** How a handler ended, for logs and the `webhooks_total{result}` metric. */
export type WebhookResult =
  | 'queued'
  | 'ignored'
  | 'refused'
  | 'duplicate'
  | 'busy'
  | 'feedback_added'
  | 'cancelled'
  | 'cancel_requested'
  | 'nothing_to_cancel';
