import { z } from 'zod';
import type { Logger } from '../observability/logger.js';
import { httpStatusOf } from '../app-error.js';
import { githubError, type GitHubRequester } from './github-client.js';

/**
 * Who and what may start a job (issue "Trigger rules"):
 *
 * 1. an `issues.labeled` event with the configured label (case-insensitive, as GitHub label names are);
 * 2. not caused by a bot — the app's own actions and other apps are ignored without a word, so two
 *    bots can never answer each other in a loop;
 * 3. on an open issue that is not a pull request;
 * 4. by a user whose permission on the repository, looked up through the API (never taken from the
 *    payload), is write, maintain or admin;
 * 5. allowed by the admin policy (allowed repositories, teams) — {@link TriggerCheck}.
 *
 * Everything that fails 3–5 gets a short comment saying why nothing happened.
 */

/** The fields of an `issues` webhook payload this app reads, checked with zod (outside data). */
export const issuesPayloadSchema = z.object({
  action: z.string(),
  label: z.object({ name: z.string() }).nullish(),
  issue: z.object({
    number: z.number().int().positive(),
    state: z.string(),
    title: z.string(),
    pull_request: z.unknown().optional(),
  }),
  repository: z.object({ name: z.string(), owner: z.object({ login: z.string() }) }),
  sender: z.object({ login: z.string(), id: z.number().int().optional(), type: z.string().optional() }),
  installation: z.object({ id: z.number().int().positive() }).nullish(),
});

/** An `issues` webhook payload, as far as this app reads it. */
export type IssuesPayload = z.infer<typeof issuesPayloadSchema>;

/** What to do with a labelled event before the permission lookup. */
export type TriggerDecision =
  /** Not for us (another label, a bot): no comment. */
  | { action: 'ignore'; reason: string }
  /** For us, but not allowed: comment `reason`. */
  | { action: 'refuse'; reason: string }
  /** Passes the payload checks: look up the sender's permission next. */
  | { action: 'check_permission' };

/** True when the sender is a bot or app account (the app itself included). */
export function isBotSender(sender: IssuesPayload['sender'], botLogin?: string): boolean {
  return (
    sender.type === 'Bot' ||
    sender.login.endsWith('[bot]') ||
    (botLogin !== undefined && sender.login === botLogin)
  );
}

/** True when `label` is the trigger label (GitHub label names are case-insensitive). */
export function isTriggerLabel(label: string | undefined | null, triggerLabel: string): boolean {
  return typeof label === 'string' && label.toLowerCase() === triggerLabel.toLowerCase();
}

/** Rules 1–3 on an `issues.labeled` payload. Pure. */
export function evaluateLabeled(
  payload: IssuesPayload,
  options: { triggerLabel: string; botLogin?: string },
): TriggerDecision {
  if (!isTriggerLabel(payload.label?.name, options.triggerLabel)) {
    return {
      action: 'ignore',
      reason: `label ${JSON.stringify(payload.label?.name ?? null)} is not the trigger label`,
    };
  }
  if (isBotSender(payload.sender, options.botLogin)) {
    return { action: 'ignore', reason: `labelled by the bot account ${payload.sender.login}` };
  }
  if (payload.issue.pull_request !== undefined && payload.issue.pull_request !== null) {
    return { action: 'refuse', reason: 'FrogNano works on issues, not on pull requests.' };
  }
  if (payload.issue.state !== 'open') {
    return { action: 'refuse', reason: 'the issue is closed. Reopen it and add the label again.' };
  }
  return { action: 'check_permission' };
}

/** Repository permission of a user, from the collaborator permission endpoint. */
export interface SenderPermission {
  /** Base permission: `admin`, `write`, `read` or `none`. */
  permission: string;
  /** Role: `admin`, `maintain`, `write`, `triage`, `read` or a custom role name; null if not given. */
  roleName: string | null;
}

const permissionResponseSchema = z.object({
  permission: z.string(),
  role_name: z.string().nullish(),
});

/**
 * Look up `username`'s permission on the repository with
 * `GET /repos/{owner}/{repo}/collaborators/{username}/permission`
 * (https://docs.github.com/en/enterprise-server@3.14/rest/collaborators/collaborators#get-repository-permissions-for-a-user).
 * A 404 (not a collaborator, unknown user) counts as `none`.
 *
 * @throws AppError `GITHUB_API_ERROR` for other failures.
 */
export async function getSenderPermission(
  octokit: GitHubRequester,
  repo: { owner: string; repo: string },
  username: string,
): Promise<SenderPermission> {
  try {
    const res = await octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
      owner: repo.owner,
      repo: repo.repo,
      username,
    });
    const data = permissionResponseSchema.parse(res.data);
    return { permission: data.permission, roleName: data.role_name ?? null };
  } catch (err) {
    if (httpStatusOf(err) === 404) return { permission: 'none', roleName: null };
    throw githubError(err, `permission of ${username}`);
  }
}

/**
 * True for write, maintain or admin. `maintain` is reported as base permission `write`; a custom
 * role counts by its base permission.
 */
export function canTrigger(p: SenderPermission): boolean {
  return (
    p.permission === 'admin' ||
    p.permission === 'write' ||
    ['admin', 'maintain', 'write'].includes(p.roleName ?? '')
  );
}

/** Input of the admin policy check (rule 5). */
export interface TriggerCheckInput {
  owner: string;
  repo: string;
  issueNumber: number;
  /** Login of who added the label. */
  sender: string;
  /** Installation-authenticated client (e.g. for team membership, `members: read`). */
  octokit: GitHubRequester;
  logger: Logger;
}

/** Result of the admin policy check. */
export type TriggerCheckResult = { allowed: true } | { allowed: false; reason: string; details?: string[] };

/**
 * The admin policy's trigger check (allowed repositories, teams), provided by the policy module
 * (`checkTriggerAllowed`). Throwing counts as a failure to decide: the webhook gets a 5xx.
 */
export type TriggerCheck = (input: TriggerCheckInput) => Promise<TriggerCheckResult>;
