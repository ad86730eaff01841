import { fromTemplate, loadExampleTemplates, type JsonObject } from './example-templates.js';
import {
  repoKey,
  type CheckRunRecord,
  type CommentRecord,
  type GheStore,
  type IssueRecord,
  type LabelRecord,
  type ReactionRecord,
  type RepoRecord,
  type ReviewRecord,
  type UserRecord,
} from './ghe-store.js';

/** Facts about the stand-in that every rendered object needs. */
export interface ObjectContext {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `url + '/api/v3'` */
  apiUrl: string;
  /** `127.0.0.1:PORT` */
  host: string;
  appId: number;
  appSlug: string;
  appName: string;
  appClientId: string;
  appOwner: string;
  installationId: number;
  installationAccount: string;
  /** Installation permissions, e.g. `{ issues: 'write' }`. */
  permissions: Record<string, string>;
  events: string[];
  createdAt: string;
  store: GheStore;
}

/** Renders store records into GitHub Enterprise Server REST / webhook JSON shapes. */
export interface GithubObjects {
  /** Point an absolute URL of the examples (any host) at the stand-in. */
  origin(s: string): string;
  user(login: string): JsonObject;
  botLogin: string;
  repository(repo: RepoRecord, options?: { withPermissions?: boolean }): JsonObject;
  label(repo: RepoRecord, label: LabelRecord): JsonObject;
  /** `labelsOverride` renders different label names (webhook payloads describing a change). */
  issue(repo: RepoRecord, issue: IssueRecord, labelsOverride?: string[]): JsonObject;
  pullRequest(repo: RepoRecord, issue: IssueRecord): JsonObject;
  comment(repo: RepoRecord, comment: CommentRecord): JsonObject;
  reaction(reaction: ReactionRecord): JsonObject;
  review(repo: RepoRecord, review: ReviewRecord, spelling: 'rest' | 'webhook'): JsonObject;
  checkRun(repo: RepoRecord, run: CheckRunRecord): JsonObject;
  app(): JsonObject;
  installation(): JsonObject;
  authorAssociation(repo: RepoRecord, login: string): string;
  /** `{label}` → label record of the repository, created (not default) when missing. */
  ensureLabel(repo: RepoRecord, name: string): LabelRecord;
}

/** GitHub's legacy global node id: base64 of `0{len(type)}:{Type}{id}`. */
export function nodeId(type: string, id: number): string {
  return Buffer.from(`0${type.length}:${type}${id}`).toString('base64');
}

/** Create the renderers for one stand-in; reads `ctx.url` lazily (it is known after listen). */
export function createGithubObjects(ctx: ObjectContext): GithubObjects {
  const t = loadExampleTemplates();
  const store = ctx.store;
  const templateRepoFullName = String(t.repository.full_name);
  const templateLogin = String(t.user.login);
  const templateOrgLogin = String(t.organizationUser.login);

  /** Point any absolute URL of the examples at the stand-in and swap the example's identities. */
  const rewriter =
    (pairs: Array<[string, string]>) =>
    (s: string): string => {
      let out = s
        .replace(/^https?:\/\/[^/]+/, ctx.url)
        .replace(/^git:\/\/[^/]+/, `git://${ctx.host}`)
        .replace(/^git@[^:]+:/, `git@${ctx.host}:`);
      for (const [from, to] of pairs) out = out.split(from).join(to);
      return out;
    };
  const repoPath = (repo: RepoRecord) => `${ctx.apiUrl}/repos/${repo.owner}/${repo.name}`;
  const htmlPath = (repo: RepoRecord) => `${ctx.url}/${repo.owner}/${repo.name}`;
  const botLogin = `${ctx.appSlug}[bot]`;
  const teamIds = new Map<string, number>();
  const teamId = (org: string, slug: string): number => {
    const key = `${org}/${slug}`.toLowerCase();
    const known = teamIds.get(key) ?? store.nextId();
    teamIds.set(key, known);
    return known;
  };

  const user = (login: string): JsonObject => {
    const u: UserRecord = store.user(login);
    const segment = encodeURIComponent(u.login);
    const template = u.type === 'Organization' ? t.organizationUser : t.user;
    const from = u.type === 'Organization' ? templateOrgLogin : templateLogin;
    return fromTemplate(
      template,
      rewriter([
        [`/users/${from}/`, `/users/${segment}/`],
        [`/users/${from}`, `/users/${segment}`],
      ]),
      {
        login: u.login,
        id: u.id,
        node_id: nodeId(u.type === 'Bot' ? 'Bot' : u.type, u.id),
        avatar_url: `${ctx.url}/avatars/u/${u.id}?`,
        url: `${ctx.apiUrl}/users/${segment}`,
        html_url: u.type === 'Bot' ? `${ctx.url}/apps/${ctx.appSlug}` : `${ctx.url}/${segment}`,
        type: u.type,
        site_admin: false,
      },
    );
  };

  const authorAssociation = (repo: RepoRecord, login: string): string => {
    if (login.toLowerCase() === repo.owner.toLowerCase()) return 'OWNER';
    const role = repo.roles.get(login.toLowerCase());
    if (role && role !== 'none') return repo.ownerType === 'Organization' ? 'MEMBER' : 'COLLABORATOR';
    return 'NONE';
  };

  const repository = (repo: RepoRecord, options: { withPermissions?: boolean } = {}): JsonObject => {
    const open = [...store.issues.values()].filter(
      (i) => i.repoKey === repoKey(repo.owner, repo.name) && i.state === 'open',
    ).length;
    const rendered = fromTemplate(t.repository, rewriter([[templateRepoFullName, repo.fullName]]), {
      id: repo.id,
      node_id: nodeId('Repository', repo.id),
      name: repo.name,
      full_name: repo.fullName,
      private: repo.private,
      owner: user(repo.owner),
      html_url: htmlPath(repo),
      description: null,
      fork: false,
      url: repoPath(repo),
      created_at: repo.createdAt,
      updated_at: repo.pushedAt,
      pushed_at: repo.pushedAt,
      clone_url: `${htmlPath(repo)}.git`,
      homepage: null,
      size: 0,
      open_issues_count: open,
      open_issues: open,
      default_branch: repo.defaultBranch,
      visibility: repo.private ? 'private' : 'public',
      archived: false,
      disabled: false,
    });
    if (options.withPermissions) {
      // What the installation may do: GitHub reports the app's access, not a person's.
      rendered.permissions = { admin: false, maintain: false, push: true, triage: true, pull: true };
    }
    return rendered;
  };

  const label = (repo: RepoRecord, l: LabelRecord): JsonObject =>
    fromTemplate(t.label, rewriter([[templateRepoFullName, repo.fullName]]), {
      id: l.id,
      node_id: nodeId('Label', l.id),
      url: `${repoPath(repo)}/labels/${encodeURIComponent(l.name)}`,
      name: l.name,
      color: l.color,
      default: l.default,
      description: l.description,
    });

  const ensureLabel = (repo: RepoRecord, name: string): LabelRecord => {
    let found = repo.labels.find((l) => l.name.toLowerCase() === name.toLowerCase());
    if (!found) {
      found = { id: store.nextId(), name, color: 'ededed', description: null, default: false };
      repo.labels.push(found);
    }
    return found;
  };

  const issue = (repo: RepoRecord, i: IssueRecord, labelsOverride?: string[]): JsonObject => {
    const base = `${repoPath(repo)}/issues/${i.number}`;
    const comments = [...store.comments.values()].filter(
      (c) => c.repoKey === i.repoKey && c.issueNumber === i.number,
    ).length;
    const rendered = fromTemplate(t.issue, rewriter([[templateRepoFullName, repo.fullName]]), {
      url: base,
      repository_url: repoPath(repo),
      labels_url: `${base}/labels{/name}`,
      comments_url: `${base}/comments`,
      events_url: `${base}/events`,
      html_url: `${htmlPath(repo)}/${i.pull ? 'pull' : 'issues'}/${i.number}`,
      id: i.id,
      node_id: nodeId(i.pull ? 'PullRequest' : 'Issue', i.id),
      number: i.number,
      title: i.title,
      user: user(i.user),
      labels: (labelsOverride ?? i.labels).map((n) => label(repo, ensureLabel(repo, n))),
      state: i.state,
      locked: false,
      assignee: i.assignees[0] === undefined ? null : user(i.assignees[0]),
      assignees: i.assignees.map(user),
      milestone: null,
      comments,
      created_at: i.createdAt,
      updated_at: i.updatedAt,
      closed_at: i.closedAt,
      author_association: authorAssociation(repo, i.user),
      active_lock_reason: null,
      body: i.body,
      state_reason: i.stateReason,
      timeline_url: `${base}/timeline`,
      performed_via_github_app: null,
    });
    if (i.pull) {
      rendered.draft = i.pull.draft;
      rendered.pull_request = {
        url: `${repoPath(repo)}/pulls/${i.number}`,
        html_url: `${htmlPath(repo)}/pull/${i.number}`,
        diff_url: `${htmlPath(repo)}/pull/${i.number}.diff`,
        patch_url: `${htmlPath(repo)}/pull/${i.number}.patch`,
        merged_at: null,
      };
    }
    return rendered;
  };

  const branchEnd = (repo: RepoRecord, ref: string, sha: string): JsonObject => ({
    label: `${repo.owner}:${ref}`,
    ref,
    sha,
    user: user(repo.owner),
    repo: repository(repo),
  });

  const pullRequest = (repo: RepoRecord, i: IssueRecord): JsonObject => {
    const p = i.pull;
    if (!p) throw new Error(`#${i.number} of ${repo.fullName} is an issue, not a pull request`);
    const api = `${repoPath(repo)}/pulls/${i.number}`;
    const issueApi = `${repoPath(repo)}/issues/${i.number}`;
    const html = `${htmlPath(repo)}/pull/${i.number}`;
    const comments = [...store.comments.values()].filter(
      (c) => c.repoKey === i.repoKey && c.issueNumber === i.number,
    ).length;
    return fromTemplate(t.pullRequest, rewriter([[templateRepoFullName, repo.fullName]]), {
      url: api,
      id: p.pullId,
      node_id: nodeId('PullRequest', p.pullId),
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      issue_url: issueApi,
      number: i.number,
      state: i.state,
      locked: false,
      title: i.title,
      user: user(i.user),
      body: i.body,
      created_at: i.createdAt,
      updated_at: i.updatedAt,
      closed_at: i.closedAt,
      merged_at: null,
      merge_commit_sha: null,
      assignee: i.assignees[0] === undefined ? null : user(i.assignees[0]),
      assignees: i.assignees.map(user),
      requested_reviewers: p.requestedReviewers.map(user),
      requested_teams: p.requestedTeams.map((slug) => ({
        id: teamId(repo.owner, slug),
        node_id: nodeId('Team', teamId(repo.owner, slug)),
        name: slug,
        slug,
        url: `${ctx.apiUrl}/orgs/${repo.owner}/teams/${slug}`,
        html_url: `${ctx.url}/orgs/${repo.owner}/teams/${slug}`,
        permission: 'pull',
        privacy: 'closed',
        description: null,
        parent: null,
      })),
      labels: i.labels.map((n) => label(repo, ensureLabel(repo, n))),
      milestone: null,
      draft: p.draft,
      commits_url: `${api}/commits`,
      review_comments_url: `${api}/comments`,
      review_comment_url: `${repoPath(repo)}/pulls/comments{/number}`,
      comments_url: `${issueApi}/comments`,
      statuses_url: `${repoPath(repo)}/statuses/${p.headSha}`,
      head: branchEnd(repo, p.headRef, p.headSha),
      base: branchEnd(repo, p.baseRef, p.baseSha),
      _links: {
        self: { href: api },
        html: { href: html },
        issue: { href: issueApi },
        comments: { href: `${issueApi}/comments` },
        review_comments: { href: `${api}/comments` },
        review_comment: { href: `${repoPath(repo)}/pulls/comments{/number}` },
        commits: { href: `${api}/commits` },
        statuses: { href: `${repoPath(repo)}/statuses/${p.headSha}` },
      },
      author_association: authorAssociation(repo, i.user),
      auto_merge: null,
      active_lock_reason: null,
      merged: false,
      mergeable: null,
      rebaseable: null,
      mergeable_state: p.draft ? 'draft' : 'unknown',
      merged_by: null,
      comments,
      review_comments: 0,
      maintainer_can_modify: p.maintainerCanModify,
      commits: p.commits,
      additions: p.additions,
      deletions: p.deletions,
      changed_files: p.changedFiles,
    });
  };

  const app = (): JsonObject =>
    fromTemplate(t.app, rewriter([]), {
      id: ctx.appId,
      slug: ctx.appSlug,
      node_id: nodeId('App', ctx.appId),
      client_id: ctx.appClientId,
      owner: user(ctx.appOwner),
      name: ctx.appName,
      description: 'GitHub Enterprise stand-in app',
      external_url: ctx.url,
      html_url: `${ctx.url}/github-apps/${ctx.appSlug}`,
      created_at: ctx.createdAt,
      updated_at: ctx.createdAt,
      permissions: { ...ctx.permissions },
      events: [...ctx.events],
      installations_count: 1,
    });

  const comment = (repo: RepoRecord, c: CommentRecord): JsonObject =>
    fromTemplate(t.comment, rewriter([[templateRepoFullName, repo.fullName]]), {
      url: `${repoPath(repo)}/issues/comments/${c.id}`,
      html_url: `${htmlPath(repo)}/issues/${c.issueNumber}#issuecomment-${c.id}`,
      issue_url: `${repoPath(repo)}/issues/${c.issueNumber}`,
      id: c.id,
      node_id: nodeId('IssueComment', c.id),
      user: user(c.user),
      created_at: c.createdAt,
      updated_at: c.updatedAt,
      author_association: authorAssociation(repo, c.user),
      body: c.body,
      performed_via_github_app: c.user === botLogin ? app() : null,
    });

  const reaction = (r: ReactionRecord): JsonObject => ({
    id: r.id,
    node_id: nodeId('Reaction', r.id),
    user: user(r.user),
    content: r.content,
    created_at: r.createdAt,
  });

  const review = (repo: RepoRecord, r: ReviewRecord, spelling: 'rest' | 'webhook'): JsonObject => {
    const html = `${htmlPath(repo)}/pull/${r.pullNumber}#pullrequestreview-${r.id}`;
    const pullApi = `${repoPath(repo)}/pulls/${r.pullNumber}`;
    return fromTemplate(t.review, rewriter([[templateRepoFullName, repo.fullName]]), {
      id: r.id,
      node_id: nodeId('PullRequestReview', r.id),
      user: user(r.user),
      body: r.body,
      commit_id: r.commitId,
      submitted_at: r.submittedAt,
      state: spelling === 'rest' ? r.state : r.state.toLowerCase(),
      html_url: html,
      pull_request_url: pullApi,
      author_association: authorAssociation(repo, r.user),
      _links: { html: { href: html }, pull_request: { href: pullApi } },
    });
  };

  const checkRun = (repo: RepoRecord, run: CheckRunRecord): JsonObject => {
    const api = `${repoPath(repo)}/check-runs/${run.id}`;
    const pulls = [...store.issues.values()].filter(
      (i) => i.repoKey === run.repoKey && i.pull && i.state === 'open' && i.pull.headSha === run.headSha,
    );
    const repoRef = { id: repo.id, url: repoPath(repo), name: repo.name };
    return fromTemplate(t.checkRun, rewriter([[templateRepoFullName, repo.fullName]]), {
      id: run.id,
      node_id: nodeId('CheckRun', run.id),
      head_sha: run.headSha,
      external_id: run.externalId,
      url: api,
      html_url: `${htmlPath(repo)}/runs/${run.id}`,
      details_url: run.detailsUrl,
      status: run.status,
      conclusion: run.conclusion,
      started_at: run.startedAt,
      completed_at: run.completedAt,
      output: {
        ...run.output,
        annotations_count: 0,
        annotations_url: `${api}/annotations`,
      },
      name: run.name,
      check_suite: { id: run.checkSuiteId },
      app: app(),
      pull_requests: pulls.map((i) => ({
        url: `${repoPath(repo)}/pulls/${i.number}`,
        id: i.pull?.pullId,
        number: i.number,
        head: { ref: i.pull?.headRef, sha: i.pull?.headSha, repo: repoRef },
        base: { ref: i.pull?.baseRef, sha: i.pull?.baseSha, repo: repoRef },
      })),
    });
  };

  const installation = (): JsonObject =>
    fromTemplate(t.installation, rewriter([]), {
      id: ctx.installationId,
      account: user(ctx.installationAccount),
      repository_selection: 'all',
      access_tokens_url: `${ctx.apiUrl}/app/installations/${ctx.installationId}/access_tokens`,
      repositories_url: `${ctx.apiUrl}/installation/repositories`,
      html_url: `${ctx.url}/organizations/${ctx.installationAccount}/settings/installations/${ctx.installationId}`,
      app_id: ctx.appId,
      app_slug: ctx.appSlug,
      target_id: store.user(ctx.installationAccount).id,
      target_type: store.user(ctx.installationAccount).type,
      permissions: { ...ctx.permissions },
      events: [...ctx.events],
      created_at: ctx.createdAt,
      updated_at: ctx.createdAt,
      single_file_name: null,
      suspended_at: null,
      suspended_by: null,
    });

  return {
    origin: rewriter([]),
    user,
    botLogin,
    repository,
    label,
    issue,
    pullRequest,
    comment,
    reaction,
    review,
    checkRun,
    app,
    installation,
    authorAssociation,
    ensureLabel,
  };
}
