/**
 * # GitHub Enterprise Server stand-in (for tests)
 *
 * A real HTTP server on `127.0.0.1` (random port) that speaks enough of GitHub Enterprise Server
 * for the FrogNano bot's `serve` and `worker` code (Probot 14, Octokit, git) to run against it
 * unchanged: the REST API under `/api/v3`, git smart HTTP under `/{owner}/{repo}.git` (served by
 * `git http-backend` over REAL bare repositories), GitHub App authentication (RS256 JWT →
 * installation token), and signed webhook deliveries built from `@octokit/webhooks-examples`
 * (`ghes-35` folder) payloads.
 *
 * ```ts
 * const ghe = await startGheStandin({ appId: 42 });
 * await ghe.createRepo('octo-org', 'calc', { files: { 'calc.py': '...', '.github/frognano.yml': '...' } });
 * ghe.setPermission('octo-org', 'calc', 'alice', 'write');
 * ghe.createIssue('octo-org', 'calc', { title: 'Fix add()', body: '...', user: 'alice' });
 * // Probot: GHE_HOST=ghe.host, GHE_PROTOCOL=http, APP_ID=ghe.appId, PRIVATE_KEY=ghe.privateKey,
 * //         WEBHOOK_SECRET=ghe.webhookSecret  (or Octokit baseUrl: ghe.apiUrl)
 * const payload = ghe.labelIssue({ owner: 'octo-org', repo: 'calc', issueNumber: 1, sender: 'alice', label: 'frognano' });
 * await ghe.sendWebhook(`${appUrl}/api/github/webhooks`, 'issues', payload);
 * // … then assert: ghe.state.pulls('octo-org', 'calc'), ghe.state.commentHistory, ghe.readBranch(…), ghe.git(…)
 * await ghe.close();
 * ```
 *
 * ## Authentication (as on GHES)
 * - `GET /app`, `GET /app/installations[/{id}]`, `POST /app/installations/{id}/access_tokens`,
 *   `GET /repos/{o}/{r}/installation`, `GET /orgs|users/{x}/installation` need
 *   `Authorization: Bearer <JWT>`: RS256 with {@link GheStandin.privateKey}, `iss` = app id (string or
 *   number), `iat` not in the future (60 s slack), `exp` in the future and at most 10 min after `iat`.
 *   Otherwise 401 `{message, documentation_url}` with GitHub's messages (Octokit's clock-skew retry
 *   keys on them).
 * - Everything else needs `Authorization: token <installation token>` or `Bearer <installation token>`
 *   (401 `Requires authentication` / `Bad credentials`); `/meta` and `/rate_limit` also answer anonymously.
 * - Installation tokens: `ghs_…`, valid for `tokenTtlMs` (default 1 h), revocable with
 *   `DELETE /installation/token`; {@link GheStandin.expireInstallationTokens} expires them all at once.
 * - git: HTTP Basic, username `x-access-token` (any non-empty username is accepted, as on GitHub),
 *   password = a valid installation token; otherwise 401 with `WWW-Authenticate: Basic`.
 *
 * ## REST endpoints (paths below `/api/v3`)
 * `GET /repos/{o}/{r}` · `GET /repos/{o}/{r}/collaborators/{user}/permission` ·
 * `GET /orgs/{org}/teams/{team}/memberships/{user}` (404 when not a member) ·
 * issues: `GET /repos/{o}/{r}/issues`, `GET|PATCH …/issues/{n}` · comments: `GET|POST …/issues/{n}/comments`,
 * `GET|PATCH|DELETE …/issues/comments/{id}` · reactions: `GET|POST …/issues/{n}/reactions`,
 * `GET|POST …/issues/comments/{id}/reactions`, `DELETE …/reactions/{id}` · labels:
 * `GET|POST|PUT|DELETE …/issues/{n}/labels`, `DELETE …/issues/{n}/labels/{name}`, `GET|POST …/labels`,
 * `GET|DELETE …/labels/{name}` · pulls: `GET|POST …/pulls` (`head`, `base`, `state` filters),
 * `GET|PATCH …/pulls/{n}`, `GET|POST|DELETE …/pulls/{n}/requested_reviewers`, `GET …/pulls/{n}/reviews`,
 * `PUT …/pulls/{n}/reviews/{id}/dismissals`, `GET …/pulls/{n}/commits` ·
 * check runs: `POST …/check-runs`, `GET|PATCH …/check-runs/{id}`, `GET …/commits/{ref}/check-runs` ·
 * `GET …/contents/{path}?ref=` (JSON with base64 content wrapped at 60 chars, or the raw bytes for
 * `Accept: application/vnd.github.raw`; 404 when absent) · `GET …/git/ref/heads/{b}`,
 * `DELETE …/git/refs/heads/{b}` · `GET …/branches[/{b}]` · `GET /installation/repositories` ·
 * `GET /meta` (`installed_version`) · `GET /rate_limit`.
 *
 * Faithful details: issues and pull requests share one number sequence; created resources answer
 * 201 with `Location`; lists paginate with `per_page` (30 default, max 100) / `page` and a `Link`
 * header only when there is more than one page; JSON is `application/json; charset=utf-8`;
 * pull request creation answers 422 "A pull request already exists for owner:branch." (open pull
 * request with that head and base), 422 `field: head|base, code: invalid` (missing branch) and
 * 422 "No commits between base and head"; bodies over 65 536 chars and check run `output.summary` /
 * `output.text` over 65 535 chars answer 422; an invalid JSON body answers 400 "Problems parsing
 * JSON"; schema violations answer 422 "Invalid request.". Objects are rendered from the GHES example
 * payloads (`@octokit/webhooks-examples/ghes-35`), so they carry GitHub's full key sets. Comments,
 * pull requests, reactions and check runs made through the API belong to `<appSlug>[bot]` (type `Bot`).
 * A push to a pull request's head branch moves its `head.sha`; deleting the head branch closes it.
 *
 * Unknown routes answer 404 `{message: 'Not Found'}` and are recorded in `state.unhandled`; handler
 * crashes answer 500 and are recorded in `state.errors` — tests should assert both are empty.
 *
 * Speed: Probot's Octokit throttles writes (`@octokit/plugin-throttling`: one POST/PATCH/PUT/DELETE
 * per second). Against the stand-in, pass `Octokit: ProbotOctokit.defaults({ throttle: { enabled: false } })`
 * (and consider `retry: { enabled: false }` when testing `failNext` with 5xx, which the retry plugin
 * would otherwise retry).
 *
 * Not modelled: forks, merging, GraphQL, review comments, commit statuses, automatic webhook
 * deliveries for the app's own actions (tests send webhooks explicitly), rate limiting.
 *
 * @module
 */
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { RestEndpointMethodTypes } from '@octokit/rest';
import { createAppAuth } from './app-auth.js';
import {
  branchSha,
  fastImportCommit,
  gitOrThrow,
  initBareRepo,
  listBranchNames,
  runGit,
  writeProtectedRefs,
  ZERO_SHA,
  STANDIN_GIT_IDENTITY,
} from './bare-repos.js';
import { createStandinApp } from './create-standin-app.js';
import type { JsonObject } from './example-templates.js';
import {
  addIssueRecord,
  createGheStore,
  isoNow,
  newReviewRecord,
  repoKey,
  type CheckRunRecord,
  type CommentHistoryEntry,
  type DeliveryRecord,
  type ErrorRecord,
  type GitRequestRecord,
  type IssueRecord,
  type PushRecord,
  type ReactionRecord,
  type RecordedRequest,
  type RepoRecord,
  type RepoRole,
  type ReviewRequestRecord,
} from './ghe-store.js';
import { createGithubObjects } from './github-objects.js';
import { addComment, addLabels } from './routes-issues.js';
import { refreshPullStats } from './routes-pulls.js';
import type { StandinContext } from './standin-context.js';
import {
  createWebhookPayloads,
  type IssueClosedEventArgs,
  type IssueLabelEventArgs,
  type PullRequestEventArgs,
  type ReviewDismissedEventArgs,
  type ReviewSubmittedEventArgs,
  type SendWebhookOptions,
} from './webhook-payloads.js';

export type {
  RepoRole,
  PushRecord,
  RecordedRequest,
  CommentHistoryEntry,
  ReactionRecord,
  ReviewRequestRecord,
};
export type { GitRequestRecord, DeliveryRecord, ErrorRecord, JsonObject, SendWebhookOptions };
export type { IssueLabelEventArgs, IssueClosedEventArgs, ReviewSubmittedEventArgs };
export type { PullRequestEventArgs, ReviewDismissedEventArgs };
export { STANDIN_GIT_IDENTITY };

/** GitHub's REST shapes (from Octokit's OpenAPI types) of the objects the stand-in renders. */
export type Issue = RestEndpointMethodTypes['issues']['get']['response']['data'];
export type IssueComment = RestEndpointMethodTypes['issues']['getComment']['response']['data'];
export type PullRequest = RestEndpointMethodTypes['pulls']['get']['response']['data'];
export type CheckRun = RestEndpointMethodTypes['checks']['get']['response']['data'];
export type Label = RestEndpointMethodTypes['issues']['getLabel']['response']['data'];
export type Review = RestEndpointMethodTypes['pulls']['getReview']['response']['data'];

/** Options of {@link startGheStandin}; every field has a default. */
export interface GheStandinOptions {
  /** GitHub App id (default 4242). */
  appId?: number;
  /** App slug; the bot user is `<appSlug>[bot]` (default `frognano`). */
  appSlug?: string;
  /** App display name (default `FrogNano`). */
  appName?: string;
  /** Webhook secret used by {@link GheStandin.sendWebhook} (default: 32 random hex chars). */
  webhookSecret?: string;
  /** The single installation's id (default 7). It covers every repository of the stand-in. */
  installationId?: number;
  /** Login of the account the app is installed on (default `octo-org`). */
  installationAccount?: string;
  /** Lifetime of installation tokens in ms (default 3 600 000 = 1 h, like GitHub). */
  tokenTtlMs?: number;
  /** GHES version reported by `/meta`, response headers and webhooks (default `3.14.0`). */
  gheVersion?: string;
  /** Installation permissions (default: contents, issues, pull_requests, checks write; metadata, members read). */
  permissions?: Record<string, string>;
}

export interface CreateRepoOptions {
  /** Path → UTF-8 content of the initial commit (default: a README.md). Modes are 100644. */
  files?: Record<string, string>;
  /** Default `main`. */
  defaultBranch?: string;
  /** Default true. */
  private?: boolean;
  /** Default `Organization`. A `User` owner gets the `admin` role on the repository. */
  ownerType?: 'User' | 'Organization';
}

export interface CreatedRepo {
  owner: string;
  name: string;
  fullName: string;
  /** `${url}/${owner}/${name}.git` (no credentials). */
  cloneUrl: string;
  defaultBranch: string;
  /** SHA of the initial commit. */
  headSha: string;
}

export interface CommitFilesOptions {
  /** Default: the repository's default branch. A missing branch starts from the default branch. */
  branch?: string;
  /** Path → UTF-8 content to write. */
  files?: Record<string, string>;
  /** Paths to delete. */
  deletions?: string[];
  /** Default `Update files`. */
  message?: string;
  /** Default {@link STANDIN_GIT_IDENTITY}. */
  author?: { name: string; email: string };
}

/** What the stand-in saw and holds, for assertions. Arrays are live; accessors render fresh copies. */
export interface GheStandinState {
  /** Every REST request under `/api/v3`, in arrival order. */
  requests: RecordedRequest[];
  /** REST (or other) requests no route handled: should stay empty. */
  unhandled: Array<{ method: string; path: string }>;
  /** Requests a handler crashed on (500): should stay empty. */
  errors: ErrorRecord[];
  /** Every create / edit / delete of every issue comment, in order. */
  commentHistory: CommentHistoryEntry[];
  reactions: ReactionRecord[];
  reviewRequests: ReviewRequestRecord[];
  /** Ref updates received over git smart HTTP. */
  pushes: PushRecord[];
  gitRequests: GitRequestRecord[];
  /** Webhooks sent with {@link GheStandin.sendWebhook}. */
  deliveries: DeliveryRecord[];
  /** Comments of an issue or pull request, oldest first. */
  comments(owner: string, repo: string, issueNumber: number): IssueComment[];
  /** The successive bodies of one comment (created, then each edit). */
  commentBodies(commentId: number): string[];
  issue(owner: string, repo: string, issueNumber: number): Issue | undefined;
  /** All pull requests (any state), by number. */
  pulls(owner: string, repo: string): PullRequest[];
  pull(owner: string, repo: string, pullNumber: number): PullRequest | undefined;
  checkRuns(owner: string, repo: string): CheckRun[];
  /** Label names on an issue or pull request. */
  labels(owner: string, repo: string, issueNumber: number): string[];
  /** Labels defined in the repository. */
  repoLabels(owner: string, repo: string): Label[];
  reviews(owner: string, repo: string, pullNumber: number): Review[];
  /** Recorded REST requests whose method and path (below `/api/v3`) match. */
  requestsTo(method: string, path: RegExp): RecordedRequest[];
}

/** A running stand-in. */
export interface GheStandin {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `url + '/api/v3'`: Octokit's `baseUrl`. */
  apiUrl: string;
  /** `127.0.0.1:PORT`: Probot's `GHE_HOST` (with `GHE_PROTOCOL=http`). */
  host: string;
  appId: number;
  appSlug: string;
  /** `<appSlug>[bot]`, the author of everything the app creates. */
  botLogin: string;
  /** The app's private key, PEM (PKCS#1), generated per instance. */
  privateKey: string;
  webhookSecret: string;
  installationId: number;
  state: GheStandinState;

  /** Create a real bare repository with one commit (by {@link STANDIN_GIT_IDENTITY}) and register it. */
  createRepo(owner: string, name: string, options?: CreateRepoOptions): Promise<CreatedRepo>;
  /** Commit files directly in the bare repository (e.g. to move the base branch); returns the SHA. */
  commitFiles(owner: string, name: string, options: CommitFilesOptions): Promise<string>;
  /** Commit SHA of a branch, or `null` when the branch does not exist. */
  readBranch(owner: string, name: string, branch: string): Promise<string | null>;
  /** A file's UTF-8 content at `ref`, or `null` when absent. */
  readFile(owner: string, name: string, ref: string, filePath: string): Promise<string | null>;
  listBranches(owner: string, name: string): Promise<string[]>;
  /** Run `git --git-dir <bare repo> args…`; resolves stdout, throws Error on a non-zero exit. */
  git(owner: string, name: string, ...args: string[]): Promise<string>;
  /** Refuse pushes to `branch` like GitHub's branch protection (`GH006`). */
  protectBranch(owner: string, name: string, branch: string): Promise<void>;
  /** Clone URL, with `x-access-token:<token>@` credentials when a token is given. */
  cloneUrl(owner: string, name: string, token?: string): string;

  /**
   * Give `user` a role on the repository. `permission` in the API is derived like GitHub's:
   * maintain → write, triage → read. Users without a role get `none`.
   */
  setPermission(owner: string, repo: string, user: string, role: RepoRole): void;
  /** Replace the members of `org/team` (team slug). */
  setTeamMembers(org: string, team: string, users: string[]): void;

  /** Open an issue (author `user`, default `octocat`); labels are created in the repo as needed. */
  createIssue(
    owner: string,
    repo: string,
    issue: { title: string; body?: string | null; user?: string; labels?: string[] },
  ): Issue;
  /** A comment by a person (the app's own comments come through the API). */
  addComment(
    owner: string,
    repo: string,
    issueNumber: number,
    comment: { user: string; body: string },
  ): IssueComment;
  /** Record a review by `reviewer` and return its `pull_request_review.submitted` payload. */
  submitReview(args: ReviewSubmittedEventArgs): JsonObject;
  /** Dismiss a stored review (state `DISMISSED`) and return the `pull_request_review.dismissed` payload. */
  dismissReview(args: ReviewDismissedEventArgs): JsonObject;
  /**
   * Commit `files` on the pull request's head branch as `sender` would push them (the head moves)
   * and return the `pull_request.synchronize` payload, with `before` and `after`.
   */
  pushToPullRequest(args: {
    owner: string;
    repo: string;
    pullNumber: number;
    sender: string;
    files: Record<string, string>;
  }): Promise<JsonObject>;
  /** `pull_request` opened / synchronize / reopened payload of the pull request as it is (state unchanged). */
  makePullRequestPayload(args: PullRequestEventArgs): JsonObject;
  /**
   * Add an inline comment to review `reviewId` (listed by
   * `GET …/pulls/{n}/reviews/{id}/comments`); returns its id.
   */
  addReviewComment(
    owner: string,
    repo: string,
    pullNumber: number,
    comment: {
      reviewId: number;
      user: string;
      body: string;
      path: string;
      line: number;
      startLine?: number;
      diffHunk: string;
    },
  ): number;
  /** Add the label to the issue (as a person would) and return the `issues.labeled` payload. */
  labelIssue(args: IssueLabelEventArgs): JsonObject;
  /** Remove the label from the issue and return the `issues.unlabeled` payload. */
  unlabelIssue(args: IssueLabelEventArgs): JsonObject;
  /** Close the issue and return the `issues.closed` payload. */
  closeIssue(args: IssueClosedEventArgs): JsonObject;

  /**
   * `issues.labeled` payload describing the issue with the label added (state is not changed).
   * Starts from the GHES example and rewrites repository, issue, label, sender, installation and
   * URLs to the stand-in. Throws Error when the repository or issue does not exist.
   */
  makeIssuesLabeledPayload(args: IssueLabelEventArgs): JsonObject;
  /** `issues.unlabeled` payload (the issue without the label); state is not changed. */
  makeIssuesUnlabeledPayload(args: IssueLabelEventArgs): JsonObject;
  /** `issues.closed` payload (no GHES example exists: built from `issues.labeled`); state is not changed. */
  makeIssuesClosedPayload(args: IssueClosedEventArgs): JsonObject;
  /** `pull_request_review.submitted` payload (state `approved` by default); no review is stored. */
  makePullRequestReviewSubmittedPayload(args: ReviewSubmittedEventArgs): JsonObject;

  /**
   * POST `payload` to `targetUrl` like GHES: `X-Hub-Signature-256` (HMAC-SHA256 of the exact body,
   * via @octokit/webhooks-methods), `X-Hub-Signature` (SHA-1), `X-GitHub-Event`, `X-GitHub-Delivery`,
   * `X-GitHub-Enterprise-Host`, `X-GitHub-Enterprise-Version`, JSON content type. Resolves with the
   * receiver's status and body; rejects on network errors or after `timeoutMs` (default 10 s).
   */
  sendWebhook(
    targetUrl: string,
    event: string,
    payload: object,
    options?: SendWebhookOptions,
  ): Promise<{ status: number; body: string }>;

  /** Mint an installation token directly (e.g. for a test's own `git clone`). */
  createInstallationToken(): { token: string; expiresAt: string };
  /** Expire every installation token issued so far (REST and git then answer 401). */
  expireInstallationTokens(): void;

  /**
   * Answer the next `times` requests matching `method` (`*` = any) and `pathRegex` (tested against
   * the full path without query, e.g. `/api/v3/repos/o/r/pulls` or `/o/r.git/git-receive-pack`)
   * with `status` and a GitHub-like error body (or `options.body`), without running the handler.
   */
  failNext(
    method: string,
    pathRegex: RegExp,
    status: number,
    times?: number,
    options?: { body?: unknown; headers?: Record<string, string> },
  ): void;

  /** Drop every `failNext` rule still pending (e.g. to end an outage made with `times: Infinity`). */
  clearFaults(): void;

  /** Stop the server, drop open connections and delete the repositories. Idempotent. */
  close(): Promise<void>;
}

const NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * Temp roots of stand-ins not yet closed. A test that fails before `close()` (or a worker process
 * that exits early) must not leave repositories in the temp dir: one exit hook removes them.
 */
const openRoots = new Set<string>();
let exitHookInstalled = false;
function trackRoot(root: string): void {
  openRoots.add(root);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const dir of openRoots) rmSync(dir, { recursive: true, force: true });
  });
}

/** The labels a new GitHub repository starts with. */
const DEFAULT_LABELS: Array<[string, string, string]> = [
  ['bug', 'd73a4a', "Something isn't working"],
  ['documentation', '0075ca', 'Improvements or additions to documentation'],
  ['duplicate', 'cfd3d7', 'This issue or pull request already exists'],
  ['enhancement', 'a2eeef', 'New feature or request'],
  ['good first issue', '7057ff', 'Good for newcomers'],
  ['help wanted', '008672', 'Extra attention is needed'],
  ['invalid', 'e4e669', "This doesn't seem right"],
  ['question', 'd876e3', 'Further information is requested'],
  ['wontfix', 'ffffff', 'This will not be worked on'],
];

/**
 * Start a stand-in on `127.0.0.1` (random port) with a fresh RSA key, an empty set of
 * repositories and one installation. Call {@link GheStandin.close} when done.
 *
 * @throws Error when the port cannot be bound or the temp directory cannot be created.
 */
export async function startGheStandin(options: GheStandinOptions = {}): Promise<GheStandin> {
  const appId = options.appId ?? 4242;
  const appSlug = options.appSlug ?? 'frognano';
  const webhookSecret = options.webhookSecret ?? randomBytes(16).toString('hex');
  const root = await mkdtemp(path.join(tmpdir(), 'ghe-standin-'));
  trackRoot(root);
  const auth = await createAppAuth({ appId, tokenTtlMs: options.tokenTtlMs ?? 3_600_000 });
  const store = createGheStore();

  // url/apiUrl/host are filled in once the server listens; the renderers read them lazily.
  const base: Omit<StandinContext, 'objects'> = {
    url: '',
    apiUrl: '',
    host: '',
    appId,
    appSlug,
    appName: options.appName ?? 'FrogNano',
    appClientId: `Iv1.${randomBytes(8).toString('hex')}`,
    appOwner: options.installationAccount ?? 'octo-org',
    installationId: options.installationId ?? 7,
    installationAccount: options.installationAccount ?? 'octo-org',
    permissions: options.permissions ?? {
      checks: 'write',
      contents: 'write',
      issues: 'write',
      members: 'read',
      metadata: 'read',
      pull_requests: 'write',
    },
    events: ['issues', 'issue_comment', 'pull_request', 'pull_request_review', 'pull_request_review_comment'],
    createdAt: isoNow(),
    store,
    auth,
    faults: [],
    gheVersion: options.gheVersion ?? '3.14.0',
    tmpDir: root,
    async refsUpdated(repo, updates) {
      const now = isoNow();
      repo.pushedAt = now;
      const changed = new Set<IssueRecord>();
      for (const { ref, newSha } of updates) {
        if (!ref.startsWith('refs/heads/')) continue;
        const branch = ref.slice('refs/heads/'.length);
        for (const issue of store.issues.values()) {
          const pull = issue.pull;
          if (issue.repoKey !== repoKey(repo.owner, repo.name) || !pull || issue.state !== 'open') continue;
          if (pull.headRef === branch) {
            issue.updatedAt = now;
            if (newSha === ZERO_SHA) {
              issue.state = 'closed';
              issue.closedAt = now;
            } else {
              pull.headSha = newSha;
              changed.add(issue);
            }
          }
          if (pull.baseRef === branch && newSha !== ZERO_SHA) {
            pull.baseSha = newSha;
            changed.add(issue);
          }
        }
      }
      for (const issue of changed) await refreshPullStats(repo, issue);
    },
  };
  const fullCtx: StandinContext = Object.assign(base, { objects: createGithubObjects(base) });
  store.user(fullCtx.installationAccount, 'Organization');
  store.user(fullCtx.objects.botLogin, 'Bot');
  const payloads = createWebhookPayloads(fullCtx, webhookSecret);

  const server: Server = createServer(createStandinApp(fullCtx));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
  } catch (err) {
    await rm(root, { recursive: true, force: true });
    openRoots.delete(root);
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  fullCtx.host = `127.0.0.1:${port}`;
  fullCtx.url = `http://${fullCtx.host}`;
  fullCtx.apiUrl = `${fullCtx.url}/api/v3`;

  const mustRepo = (owner: string, name: string): RepoRecord => {
    const repo = store.repo(owner, name);
    if (!repo) throw new Error(`ghe-standin: no repository ${owner}/${name}; call createRepo first`);
    return repo;
  };
  const mustIssue = (repo: RepoRecord, n: number): IssueRecord => {
    const issue = store.issue(repo, n);
    if (!issue) throw new Error(`ghe-standin: no issue #${n} in ${repo.fullName}`);
    return issue;
  };
  const o = fullCtx.objects;

  const state: GheStandinState = {
    requests: store.requests,
    unhandled: store.unhandled,
    errors: store.errors,
    commentHistory: store.commentHistory,
    reactions: store.reactions,
    reviewRequests: store.reviewRequests,
    pushes: store.pushes,
    gitRequests: store.gitRequests,
    deliveries: store.deliveries,
    comments(owner, name, issueNumber) {
      const repo = mustRepo(owner, name);
      return [...store.comments.values()]
        .filter((c) => c.repoKey === repoKey(owner, name) && c.issueNumber === issueNumber)
        .sort((a, b) => a.id - b.id)
        .map((c) => o.comment(repo, c) as unknown as IssueComment);
    },
    commentBodies: (commentId) =>
      store.commentHistory
        .filter((h) => h.commentId === commentId && h.action !== 'deleted')
        .map((h) => h.body),
    issue(owner, name, n) {
      const repo = mustRepo(owner, name);
      const issue = store.issue(repo, n);
      return issue && (o.issue(repo, issue) as unknown as Issue);
    },
    pulls(owner, name) {
      const repo = mustRepo(owner, name);
      return [...store.issues.values()]
        .filter((i) => i.repoKey === repoKey(owner, name) && i.pull)
        .sort((a, b) => a.number - b.number)
        .map((i) => o.pullRequest(repo, i) as unknown as PullRequest);
    },
    pull(owner, name, n) {
      const repo = mustRepo(owner, name);
      const issue = store.issue(repo, n);
      return issue?.pull ? (o.pullRequest(repo, issue) as unknown as PullRequest) : undefined;
    },
    checkRuns(owner, name) {
      const repo = mustRepo(owner, name);
      return [...store.checkRuns.values()]
        .filter((r: CheckRunRecord) => r.repoKey === repoKey(owner, name))
        .map((r) => o.checkRun(repo, r) as unknown as CheckRun);
    },
    labels: (owner, name, n) => [...mustIssue(mustRepo(owner, name), n).labels],
    repoLabels(owner, name) {
      const repo = mustRepo(owner, name);
      return repo.labels.map((l) => o.label(repo, l) as unknown as Label);
    },
    reviews(owner, name, n) {
      const repo = mustRepo(owner, name);
      return store.reviews
        .filter((r) => r.repoKey === repoKey(owner, name) && r.pullNumber === n)
        .map((r) => o.review(repo, r, 'rest') as unknown as Review);
    },
    requestsTo: (method, pattern) =>
      store.requests.filter((r) => r.method === method.toUpperCase() && pattern.test(r.path)),
  };

  let closed = false;
  const standin: GheStandin = {
    url: fullCtx.url,
    apiUrl: fullCtx.apiUrl,
    host: fullCtx.host,
    appId,
    appSlug,
    botLogin: o.botLogin,
    privateKey: auth.privateKey,
    webhookSecret,
    installationId: fullCtx.installationId,
    state,

    async createRepo(owner, name, repoOptions = {}) {
      if (!NAME.test(owner) || !NAME.test(name) || name.endsWith('.git')) {
        throw new Error(`ghe-standin: invalid repository name ${owner}/${name}`);
      }
      if (store.repo(owner, name)) throw new Error(`ghe-standin: repository ${owner}/${name} already exists`);
      const defaultBranch = repoOptions.defaultBranch ?? 'main';
      const dir = path.join(root, 'git', owner, `${name}.git`);
      const headSha = await initBareRepo(dir, {
        files: repoOptions.files ?? { 'README.md': `# ${name}\n` },
        defaultBranch,
      });
      const ownerType = repoOptions.ownerType ?? 'Organization';
      store.user(owner, ownerType);
      const now = isoNow();
      const record: RepoRecord = {
        id: store.nextId(),
        owner,
        name,
        fullName: `${owner}/${name}`,
        ownerType,
        private: repoOptions.private ?? true,
        defaultBranch,
        dir,
        createdAt: now,
        pushedAt: now,
        labels: DEFAULT_LABELS.map(([label, color, description]) => ({
          id: store.nextId(),
          name: label,
          color,
          description,
          default: true,
        })),
        protectedBranches: new Set(),
        roles: new Map(ownerType === 'User' ? [[owner.toLowerCase(), 'admin']] : []),
        nextNumber: 1,
      };
      store.repos.set(repoKey(owner, name), record);
      return {
        owner,
        name,
        fullName: record.fullName,
        cloneUrl: `${fullCtx.url}/${owner}/${name}.git`,
        defaultBranch,
        headSha,
      };
    },

    async commitFiles(owner, name, commit) {
      const repo = mustRepo(owner, name);
      const branch = commit.branch ?? repo.defaultBranch;
      const parent = (await branchSha(repo.dir, branch)) ?? (await branchSha(repo.dir, repo.defaultBranch));
      const sha = await fastImportCommit(repo.dir, {
        branch,
        parent,
        files: commit.files ?? {},
        deletions: commit.deletions ?? [],
        message: commit.message ?? 'Update files\n',
        author: commit.author,
        timeS: Math.floor(Date.now() / 1000),
      });
      await fullCtx.refsUpdated(repo, [{ ref: `refs/heads/${branch}`, newSha: sha }]);
      return sha;
    },

    readBranch: (owner, name, branch) => branchSha(mustRepo(owner, name).dir, branch),

    async readFile(owner, name, ref, filePath) {
      const r = await runGit([
        '--git-dir',
        mustRepo(owner, name).dir,
        'cat-file',
        'blob',
        `${ref}:${filePath}`,
      ]);
      return r.code === 0 ? r.stdout : null;
    },

    listBranches: (owner, name) => listBranchNames(mustRepo(owner, name).dir),

    git: (owner, name, ...args) => gitOrThrow(['--git-dir', mustRepo(owner, name).dir, ...args]),

    async protectBranch(owner, name, branch) {
      const repo = mustRepo(owner, name);
      repo.protectedBranches.add(branch);
      await writeProtectedRefs(repo.dir, repo.protectedBranches);
    },

    cloneUrl(owner, name, token) {
      const repo = mustRepo(owner, name);
      const credentials = token === undefined ? '' : `x-access-token:${token}@`;
      return `http://${credentials}${fullCtx.host}/${repo.owner}/${repo.name}.git`;
    },

    setPermission(owner, name, user, role) {
      mustRepo(owner, name).roles.set(user.toLowerCase(), role);
      store.user(user);
    },

    setTeamMembers(org, team, users) {
      store.teams.set(`${org}/${team}`.toLowerCase(), new Set(users.map((u) => u.toLowerCase())));
    },

    createIssue(owner, name, issue) {
      const repo = mustRepo(owner, name);
      const record = addIssueRecord(store, repo, {
        title: issue.title,
        body: issue.body ?? null,
        user: issue.user ?? 'octocat',
      });
      addLabels(fullCtx, repo, record, issue.labels ?? []);
      return o.issue(repo, record) as unknown as Issue;
    },

    addComment(owner, name, issueNumber, comment) {
      const repo = mustRepo(owner, name);
      const record = addComment(fullCtx, repo, mustIssue(repo, issueNumber), comment.user, comment.body);
      return o.comment(repo, record) as unknown as IssueComment;
    },

    addReviewComment(owner, name, pullNumber, c) {
      const repo = mustRepo(owner, name);
      mustIssue(repo, pullNumber);
      const id = store.nextId();
      store.reviewComments.push({
        id,
        repoKey: repoKey(owner, name),
        pullNumber,
        reviewId: c.reviewId,
        user: c.user,
        body: c.body,
        path: c.path,
        line: c.line,
        startLine: c.startLine ?? null,
        diffHunk: c.diffHunk,
        createdAt: isoNow(),
      });
      return id;
    },

    submitReview(args) {
      const repo = mustRepo(args.owner, args.repo);
      const issue = mustIssue(repo, args.pullNumber);
      if (!issue.pull)
        throw new Error(`ghe-standin: #${args.pullNumber} of ${repo.fullName} is not a pull request`);
      const review = newReviewRecord(
        store,
        repo,
        { number: issue.number, headSha: issue.pull.headSha },
        args,
      );
      store.reviews.push(review);
      return payloads.pullRequestReviewSubmitted(args, review);
    },

    dismissReview(args) {
      const review = store.reviews.find((r) => r.id === args.reviewId);
      if (!review) throw new Error(`ghe-standin: no review ${args.reviewId}`);
      review.state = 'DISMISSED';
      return payloads.pullRequestReviewDismissed(args);
    },

    async pushToPullRequest(args) {
      const repo = mustRepo(args.owner, args.repo);
      const pull = mustIssue(repo, args.pullNumber).pull;
      if (!pull)
        throw new Error(`ghe-standin: #${args.pullNumber} of ${repo.fullName} is not a pull request`);
      const before = pull.headSha;
      await standin.commitFiles(args.owner, args.repo, {
        branch: pull.headRef,
        files: args.files,
        message: `Change by ${args.sender}\n`,
        author: {
          name: args.sender,
          email: `${args.sender}@users.noreply.${fullCtx.host.replace(/:\d+$/, '')}`,
        },
      });
      return payloads.pullRequestEvent({ ...args, action: 'synchronize', before });
    },

    makePullRequestPayload: (args) => payloads.pullRequestEvent(args),

    labelIssue(args) {
      const payload = payloads.issuesLabeled(args);
      const repo = mustRepo(args.owner, args.repo);
      addLabels(fullCtx, repo, mustIssue(repo, args.issueNumber), [args.label]);
      return payload;
    },

    unlabelIssue(args) {
      const payload = payloads.issuesUnlabeled(args);
      const issue = mustIssue(mustRepo(args.owner, args.repo), args.issueNumber);
      issue.labels = issue.labels.filter((l) => l.toLowerCase() !== args.label.toLowerCase());
      issue.updatedAt = isoNow();
      return payload;
    },

    closeIssue(args) {
      const payload = payloads.issuesClosed(args);
      const issue = mustIssue(mustRepo(args.owner, args.repo), args.issueNumber);
      const closedIssue = payload.issue as { closed_at: string };
      issue.state = 'closed';
      issue.stateReason = args.stateReason ?? 'completed';
      issue.closedAt = closedIssue.closed_at;
      issue.updatedAt = closedIssue.closed_at;
      return payload;
    },

    makeIssuesLabeledPayload: (args) => payloads.issuesLabeled(args),
    makeIssuesUnlabeledPayload: (args) => payloads.issuesUnlabeled(args),
    makeIssuesClosedPayload: (args) => payloads.issuesClosed(args),
    makePullRequestReviewSubmittedPayload: (args) => payloads.pullRequestReviewSubmitted(args),
    sendWebhook: (targetUrl, event, payload, sendOptions) =>
      payloads.send(targetUrl, event, payload, sendOptions),

    createInstallationToken() {
      const record = auth.issueInstallationToken(fullCtx.installationId);
      return { token: record.token, expiresAt: isoNow(record.expiresAtMs) };
    },

    expireInstallationTokens: () => auth.expireAll(),

    failNext(method, pathRegex, status, times = 1, failOptions = {}) {
      fullCtx.faults.push({
        method: method === '*' ? '*' : method.toUpperCase(),
        pattern: pathRegex,
        status,
        remaining: times,
        body: failOptions.body,
        headers: failOptions.headers,
      });
    },

    clearFaults() {
      fullCtx.faults.length = 0;
    },

    async close() {
      if (closed) return;
      closed = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await rm(root, { recursive: true, force: true, maxRetries: 3 });
      openRoots.delete(root);
    },
  };
  return standin;
}
