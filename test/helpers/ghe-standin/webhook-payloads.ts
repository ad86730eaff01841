import { createHmac, randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { fromTemplate, loadExampleTemplates, type JsonObject } from './example-templates.js';
import { nodeId } from './github-objects.js';
import {
  isoNow,
  newReviewRecord,
  type IssueRecord,
  type RepoRecord,
  type ReviewRecord,
} from './ghe-store.js';
import type { StandinContext } from './standin-context.js';

/** Arguments of the `issues.labeled` / `issues.unlabeled` builders. */
export interface IssueLabelEventArgs {
  owner: string;
  repo: string;
  issueNumber: number;
  /** Login of the person who (un)labeled the issue. */
  sender: string;
  /** Label name. */
  label: string;
}

export interface IssueClosedEventArgs {
  owner: string;
  repo: string;
  issueNumber: number;
  sender: string;
  stateReason?: 'completed' | 'not_planned';
}

export interface ReviewSubmittedEventArgs {
  owner: string;
  repo: string;
  pullNumber: number;
  /** Login of the reviewer (also the sender). */
  reviewer: string;
  body?: string | null;
  /** Default `approved`. */
  state?: 'approved' | 'changes_requested' | 'commented';
}

/** Arguments of the `pull_request` opened / synchronize / reopened builder. */
export interface PullRequestEventArgs {
  owner: string;
  repo: string;
  pullNumber: number;
  action: 'opened' | 'synchronize' | 'reopened';
  /** Who opened, pushed or reopened (the app's pushes: its bot login). */
  sender: string;
  /** `synchronize`: the head commit before the push. */
  before?: string;
}

/** Arguments of the `pull_request_review.dismissed` builder. */
export interface ReviewDismissedEventArgs {
  owner: string;
  repo: string;
  pullNumber: number;
  reviewId: number;
  /** Who dismissed the review. */
  sender: string;
}

export interface SendWebhookOptions {
  /** Default: the stand-in's webhook secret. */
  secret?: string;
  /** Default: a random UUID, as GitHub sends. */
  deliveryId?: string;
  /** Bound on the whole delivery (ms); default 10 000. */
  timeoutMs?: number;
}

/** Builders of webhook payloads that mirror the stand-in's state, starting from GHES examples. */
export interface WebhookPayloads {
  issuesLabeled(args: IssueLabelEventArgs): JsonObject;
  issuesUnlabeled(args: IssueLabelEventArgs): JsonObject;
  issuesClosed(args: IssueClosedEventArgs): JsonObject;
  /** `review` is the record to describe; without one a review is rendered but not stored. */
  pullRequestReviewSubmitted(args: ReviewSubmittedEventArgs, review?: ReviewRecord): JsonObject;
  /** `pull_request` opened / synchronize / reopened, describing the pull request as it is now. */
  pullRequestEvent(args: PullRequestEventArgs): JsonObject;
  /** `pull_request_review.dismissed` of a stored review (as it is now: dismissed). */
  pullRequestReviewDismissed(args: ReviewDismissedEventArgs): JsonObject;
  send(
    targetUrl: string,
    event: string,
    payload: object,
    options?: SendWebhookOptions,
  ): Promise<{ status: number; body: string }>;
}

/** Create the payload builders and the signed sender for one stand-in. */
export function createWebhookPayloads(ctx: StandinContext, webhookSecret: string): WebhookPayloads {
  const t = loadExampleTemplates();

  const lookup = (owner: string, name: string, number: number): { repo: RepoRecord; issue: IssueRecord } => {
    const repo = ctx.store.repo(owner, name);
    if (!repo) throw new Error(`ghe-standin: no repository ${owner}/${name}; call createRepo first`);
    const issue = ctx.store.issue(repo, number);
    if (!issue)
      throw new Error(`ghe-standin: no issue #${number} in ${owner}/${name}; call createIssue first`);
    return { repo, issue };
  };

  /** The fields every event carries: repository, sender, installation, enterprise, organization. */
  const envelope = (
    template: JsonObject,
    repo: RepoRecord,
    sender: string,
    overrides: JsonObject,
  ): JsonObject => {
    const payload = fromTemplate(template, ctx.objects.origin, {
      ...overrides,
      repository: ctx.objects.repository(repo),
      sender: ctx.objects.user(sender),
      installation: {
        id: ctx.installationId,
        node_id: nodeId('IntegrationInstallation', ctx.installationId),
      },
    });
    if (repo.ownerType === 'Organization') {
      const org = ctx.store.user(repo.owner, 'Organization');
      const api = `${ctx.apiUrl}/orgs/${repo.owner}`;
      payload.organization = {
        login: org.login,
        id: org.id,
        node_id: nodeId('Organization', org.id),
        url: api,
        repos_url: `${api}/repos`,
        events_url: `${api}/events`,
        hooks_url: `${api}/hooks`,
        issues_url: `${api}/issues`,
        members_url: `${api}/members{/member}`,
        public_members_url: `${api}/public_members{/member}`,
        avatar_url: `${ctx.url}/avatars/u/${org.id}?`,
        description: null,
      };
    }
    return payload;
  };

  const labelEvent = (template: JsonObject, action: 'labeled' | 'unlabeled', args: IssueLabelEventArgs) => {
    const { repo, issue } = lookup(args.owner, args.repo, args.issueNumber);
    const label = ctx.objects.ensureLabel(repo, args.label);
    const others = issue.labels.filter((l) => l.toLowerCase() !== label.name.toLowerCase());
    // The issue in the payload is the issue after the change.
    const after = action === 'labeled' ? [...others, label.name] : others;
    return envelope(template, repo, args.sender, {
      action,
      issue: ctx.objects.issue(repo, issue, after),
      label: ctx.objects.label(repo, label),
    });
  };

  return {
    issuesLabeled: (args) => labelEvent(t.issuesLabeled, 'labeled', args),
    issuesUnlabeled: (args) => labelEvent(t.issuesUnlabeled, 'unlabeled', args),

    issuesClosed(args) {
      const { repo, issue } = lookup(args.owner, args.repo, args.issueNumber);
      // No ghes-* folder ships issues.closed: start from issues.labeled and drop `label`.
      const { label: _label, ...template } = t.issuesLabeled;
      const closed: IssueRecord = {
        ...issue,
        state: 'closed',
        stateReason: args.stateReason ?? 'completed',
        closedAt: issue.closedAt ?? isoNow(),
      };
      return envelope(template, repo, args.sender, {
        action: 'closed',
        issue: ctx.objects.issue(repo, closed),
      });
    },

    pullRequestReviewSubmitted(args, review) {
      const { repo, issue } = lookup(args.owner, args.repo, args.pullNumber);
      if (!issue.pull)
        throw new Error(`ghe-standin: #${args.pullNumber} of ${repo.fullName} is not a pull request`);
      const record =
        review ??
        newReviewRecord(ctx.store, repo, { number: issue.number, headSha: issue.pull.headSha }, args);
      return envelope(t.reviewSubmitted, repo, args.reviewer, {
        action: 'submitted',
        review: ctx.objects.review(repo, record, 'webhook'),
        pull_request: ctx.objects.pullRequest(repo, issue),
      });
    },

    pullRequestEvent(args) {
      const { repo, issue } = lookup(args.owner, args.repo, args.pullNumber);
      if (!issue.pull)
        throw new Error(`ghe-standin: #${args.pullNumber} of ${repo.fullName} is not a pull request`);
      return envelope(t.pullRequestOpened, repo, args.sender, {
        action: args.action,
        number: issue.number,
        pull_request: ctx.objects.pullRequest(repo, issue),
        ...(args.action === 'synchronize' ? { before: args.before ?? null, after: issue.pull.headSha } : {}),
      });
    },

    pullRequestReviewDismissed(args) {
      const { repo, issue } = lookup(args.owner, args.repo, args.pullNumber);
      const review = ctx.store.reviews.find((r) => r.id === args.reviewId);
      if (!issue.pull || !review)
        throw new Error(`ghe-standin: no review ${args.reviewId} on #${args.pullNumber}`);
      return envelope(t.reviewSubmitted, repo, args.sender, {
        action: 'dismissed',
        review: ctx.objects.review(repo, review, 'webhook'),
        pull_request: ctx.objects.pullRequest(repo, issue),
      });
    },

    async send(targetUrl, event, payload, options = {}) {
      const body = JSON.stringify(payload);
      const secret = options.secret ?? webhookSecret;
      const deliveryId = options.deliveryId ?? randomUUID();
      const action = 'action' in payload && typeof payload.action === 'string' ? payload.action : null;
      const response = await fetch(targetUrl, {
        method: 'POST',
        body,
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
        headers: {
          'Content-Type': 'application/json',
          'User-Agent': 'GitHub-Hookshot/standin',
          'X-GitHub-Event': event,
          'X-GitHub-Delivery': deliveryId,
          'X-GitHub-Hook-ID': '1',
          'X-GitHub-Hook-Installation-Target-ID': String(ctx.appId),
          'X-GitHub-Hook-Installation-Target-Type': 'integration',
          'X-GitHub-Enterprise-Host': ctx.host,
          'X-GitHub-Enterprise-Version': ctx.gheVersion,
          // GHES still sends the SHA-1 signature next to the SHA-256 one.
          'X-Hub-Signature': `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`,
          'X-Hub-Signature-256': await sign(secret, body),
        },
      });
      const text = await response.text();
      ctx.store.deliveries.push({ targetUrl, event, action, deliveryId, status: response.status });
      return { status: response.status, body: text };
    },
  };
}
