import type { JobData } from '../queue/job-data.js';
import type { IssueRef } from '../queue/queue-keys.js';
import { githubError, type GitHubRequester } from './github-client.js';
import { createStatusComment } from './status-comment.js';
import { canTrigger, evaluateLabeled, getSenderPermission, issuesPayloadSchema } from './trigger-rules.js';
import type { WebhookDeps, WebhookInput, WebhookResult } from './webhook-deps.js';

/** Hidden marker of the short "nothing happened" comments (not the status comment). */
export const NOTICE_MARKER = '<!-- frognano:notice -->';

/**
 * `issues.labeled`: apply the trigger rules, then reserve the issue, write the status comment
 * "queued (position n)", enqueue the job and react with 👀.
 *
 * Order matters for "nothing half-done": the Redis reservation comes first (Redis down → throw →
 * 5xx, nothing written on GitHub); the status comment is written before the job is added (so the
 * worker, which may start within milliseconds, edits that one comment instead of racing to create
 * a second); if adding the job then fails, the reservation is undone, the comment is corrected to
 * "could not be queued" and the error is rethrown (5xx, so GitHub marks the delivery failed and it
 * can be redelivered).
 *
 * @returns what happened (for metrics).
 * @throws on Redis or GitHub failures (the webhook answers 5xx).
 */
export async function handleIssuesLabeled(input: WebhookInput, deps: WebhookDeps): Promise<WebhookResult> {
  const parsed = issuesPayloadSchema.safeParse(input.payload);
  if (!parsed.success) {
    input.logger.warn(
      { issues: parsed.error.issues.slice(0, 5) },
      'issues.labeled payload not understood; ignored',
    );
    return 'ignored';
  }
  const payload = parsed.data;
  const ref: IssueRef = {
    owner: payload.repository.owner.login,
    repo: payload.repository.name,
    issueNumber: payload.issue.number,
  };
  const fullName = `${ref.owner}/${ref.repo}`;
  const log = input.logger.child({ repo: fullName, issue: ref.issueNumber, deliveryId: input.deliveryId });

  const decision = evaluateLabeled(payload, {
    triggerLabel: deps.triggerLabel(fullName),
    botLogin: deps.botLogin(),
  });
  if (decision.action === 'ignore') {
    log.debug({ reason: decision.reason }, 'labeled event ignored');
    return 'ignored';
  }
  if (decision.action === 'refuse') {
    await postNotice(input.octokit, ref, `FrogNano did not start: ${decision.reason}`);
    log.info({ reason: decision.reason }, 'labeled event refused');
    return 'refused';
  }
  const installationId = payload.installation?.id;
  if (!installationId) {
    log.warn('labeled event without installation id; ignored');
    return 'ignored';
  }

  const sender = payload.sender.login;
  const permission = await getSenderPermission(input.octokit, { owner: ref.owner, repo: ref.repo }, sender);
  if (!canTrigger(permission)) {
    await postNotice(
      input.octokit,
      ref,
      `FrogNano did not start: @${sender} needs write, maintain or admin access to this repository to start it ` +
        `(current access: ${permission.roleName ?? permission.permission}). Ask someone with write access to add the label.`,
    );
    log.info({ sender, permission }, 'labeled by a user without write access; refused');
    return 'refused';
  }

  if (deps.checkTriggerAllowed) {
    const allowed = await deps.checkTriggerAllowed({
      owner: ref.owner,
      repo: ref.repo,
      issueNumber: ref.issueNumber,
      sender,
      octokit: input.octokit,
      logger: log,
    });
    if (!allowed.allowed) {
      const details = allowed.details?.length ? `\n\n${allowed.details.map((d) => `- ${d}`).join('\n')}` : '';
      await postNotice(input.octokit, ref, `FrogNano did not start: ${allowed.reason}${details}`);
      log.info({ sender, reason: allowed.reason }, 'refused by policy');
      return 'refused';
    }
  }

  const reservation = await deps.jobs.reserve(ref, input.deliveryId);
  if (reservation.status === 'duplicate_delivery') {
    log.info({ jobId: reservation.jobId }, 'delivery already handled; ignored');
    return 'duplicate';
  }
  if (reservation.status === 'busy') {
    await postNotice(
      input.octokit,
      ref,
      `FrogNano did not start a new run: a job for this issue is already ${reservation.state === 'active' ? 'running' : 'queued'}. ` +
        'Its progress is in the status comment. To start over, remove the label, wait for the status comment to say ' +
        '"cancelled", then add the label again.',
    );
    log.info({ jobId: reservation.jobId, state: reservation.state }, 'issue already has a job');
    return 'busy';
  }

  const { jobId, position } = reservation;
  const status = createStatusComment(
    input.octokit,
    { owner: ref.owner, repo: ref.repo, issue: ref.issueNumber },
    { botLogin: deps.botLogin(), jobId, logger: log },
  );
  try {
    const statusCommentId = await status.update({ phase: 'queued', position, triggeredBy: sender });
    const data: JobData = {
      version: 1,
      deliveryId: input.deliveryId,
      installationId,
      owner: ref.owner,
      repo: ref.repo,
      issueNumber: ref.issueNumber,
      label: payload.label?.name ?? deps.triggerLabel(fullName),
      triggeredBy: { login: sender, ...(payload.sender.id !== undefined ? { id: payload.sender.id } : {}) },
      enqueuedAt: (deps.now?.() ?? new Date()).toISOString(),
      statusCommentId,
    };
    await deps.jobs.enqueue(jobId, data, { attempts: deps.attemptsFor?.(fullName) });
  } catch (err) {
    await deps.jobs.abandon(ref, jobId, input.deliveryId);
    if (status.commentId !== null) {
      await status
        .update({ phase: 'not_queued', reason: 'the job queue is unavailable right now' })
        .catch((e: unknown) => log.warn({ err: e }, 'could not correct the status comment'));
    }
    log.error({ err, jobId }, 'could not enqueue; answering 5xx so the delivery can be retried');
    throw err;
  }

  // After the job is safely queued: the reaction is a courtesy, its failure changes nothing.
  await input.octokit
    .request('POST /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
      owner: ref.owner,
      repo: ref.repo,
      issue_number: ref.issueNumber,
      content: 'eyes',
    })
    .catch((e: unknown) => log.warn({ err: e }, 'could not add the 👀 reaction'));
  log.info({ jobId, position, sender }, 'job queued');
  return 'queued';
}

/** Post a short comment (with {@link NOTICE_MARKER}) saying why nothing happened. */
export async function postNotice(octokit: GitHubRequester, ref: IssueRef, text: string): Promise<void> {
  try {
    await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner: ref.owner,
      repo: ref.repo,
      issue_number: ref.issueNumber,
      body: `${NOTICE_MARKER}\n🐸 ${text}`,
    });
  } catch (err) {
    throw githubError(err, 'post a comment');
  }
}
