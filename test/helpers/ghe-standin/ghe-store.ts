/**
 * In-memory records of the GitHub Enterprise stand-in. Records hold facts; `github-objects.ts`
 * renders them into GitHub's REST / webhook JSON shapes. Lookups by owner/repo are
 * case-insensitive, like GitHub's.
 */

/** A repository role as GitHub names it (`role_name`); `none` = no access. */
export type RepoRole = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';

export interface UserRecord {
  login: string;
  id: number;
  type: 'User' | 'Organization' | 'Bot';
}

export interface LabelRecord {
  id: number;
  name: string;
  /** 6 hex digits, no `#`. */
  color: string;
  description: string | null;
  default: boolean;
}

export interface RepoRecord {
  id: number;
  owner: string;
  name: string;
  fullName: string;
  ownerType: 'User' | 'Organization';
  private: boolean;
  defaultBranch: string;
  /** Absolute path of the bare repository. */
  dir: string;
  createdAt: string;
  pushedAt: string;
  labels: LabelRecord[];
  /** Branches the pre-receive hook refuses pushes to (GitHub's GH006). */
  protectedBranches: Set<string>;
  /** user login (lower case) → role. */
  roles: Map<string, RepoRole>;
  /** Next issue / pull request number (shared sequence, like GitHub). */
  nextNumber: number;
}

export interface PullFields {
  pullId: number;
  headRef: string;
  headSha: string;
  baseRef: string;
  baseSha: string;
  draft: boolean;
  maintainerCanModify: boolean;
  requestedReviewers: string[];
  requestedTeams: string[];
  commits: number;
  additions: number;
  deletions: number;
  changedFiles: number;
}

export interface IssueRecord {
  id: number;
  repoKey: string;
  number: number;
  title: string;
  body: string | null;
  user: string;
  /** Label names, in the order they were added. */
  labels: string[];
  assignees: string[];
  state: 'open' | 'closed';
  stateReason: 'completed' | 'not_planned' | 'reopened' | null;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  /** Present when this number is a pull request. */
  pull?: PullFields;
}

export interface CommentRecord {
  id: number;
  repoKey: string;
  issueNumber: number;
  body: string;
  user: string;
  createdAt: string;
  updatedAt: string;
}

/** One step in a comment's life; `state.commentHistory` keeps them in order. */
export interface CommentHistoryEntry {
  commentId: number;
  owner: string;
  repo: string;
  issueNumber: number;
  action: 'created' | 'edited' | 'deleted';
  /** The body after this step (the last body for `deleted`). */
  body: string;
  user: string;
  /** ISO 8601. */
  at: string;
}

export interface ReactionRecord {
  id: number;
  owner: string;
  repo: string;
  subject: { kind: 'issue'; issueNumber: number } | { kind: 'comment'; commentId: number };
  /** `+1`, `-1`, `laugh`, `confused`, `heart`, `hooray`, `rocket` or `eyes`. */
  content: string;
  user: string;
  createdAt: string;
}

export interface ReviewRequestRecord {
  owner: string;
  repo: string;
  pullNumber: number;
  reviewers: string[];
  teamReviewers: string[];
  at: string;
}

export interface ReviewRecord {
  id: number;
  repoKey: string;
  pullNumber: number;
  user: string;
  body: string | null;
  /** REST spelling (upper case); webhooks use the lower-case form. */
  state: 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED';
  commitId: string;
  submittedAt: string;
}

/** An inline comment of a review (on the diff). */
export interface ReviewCommentRecord {
  id: number;
  repoKey: string;
  pullNumber: number;
  reviewId: number;
  user: string;
  body: string;
  path: string;
  line: number;
  startLine: number | null;
  diffHunk: string;
  createdAt: string;
  /** Id of the comment this one replies to (`in_reply_to_id`), for replies. */
  inReplyTo?: number;
}

export interface CheckRunRecord {
  id: number;
  repoKey: string;
  name: string;
  headSha: string;
  status: 'queued' | 'in_progress' | 'completed' | 'waiting' | 'requested' | 'pending';
  conclusion: string | null;
  startedAt: string;
  completedAt: string | null;
  output: { title: string | null; summary: string | null; text: string | null };
  detailsUrl: string | null;
  externalId: string;
  checkSuiteId: number;
}

/** A ref update received over git smart HTTP (from the repository's post-receive hook). */
export interface PushRecord {
  owner: string;
  repo: string;
  /** Full ref name, e.g. `refs/heads/frognano/issue-1`. */
  ref: string;
  /** 40 hex digits; all zeros when the ref was created. */
  oldSha: string;
  /** 40 hex digits; all zeros when the ref was deleted. */
  newSha: string;
  /** The HTTP Basic username the push authenticated with (e.g. `x-access-token`). */
  user: string;
  at: string;
}

/** One REST request under `/api/v3`. */
export interface RecordedRequest {
  method: string;
  /** Path below `/api/v3`, without the query, e.g. `/repos/o/r/issues/1/comments`. */
  path: string;
  query: Record<string, string>;
  /** Parsed JSON body, or `undefined` when there was none. */
  body: unknown;
  /** How the request authenticated. */
  auth: 'app' | 'installation' | 'none' | 'invalid';
  /** Response status, set when the response finished. */
  status?: number;
  /** True when a `failNext` rule answered this request. */
  injected?: boolean;
}

/** One git smart HTTP request. */
export interface GitRequestRecord {
  method: string;
  owner: string;
  repo: string;
  /** e.g. `/info/refs`, `/git-upload-pack`, `/git-receive-pack`. */
  pathInfo: string;
  /** `git-upload-pack` (fetch/clone) or `git-receive-pack` (push), when known. */
  service: string | null;
  authenticated: boolean;
  status?: number;
}

export interface DeliveryRecord {
  targetUrl: string;
  event: string;
  action: string | null;
  deliveryId: string;
  status: number;
}

export interface ErrorRecord {
  method: string;
  path: string;
  message: string;
}

/** All mutable records of one stand-in instance. */
export interface GheStore {
  users: Map<string, UserRecord>;
  repos: Map<string, RepoRecord>;
  /** `${repoKey}#${number}` → issue or pull request. */
  issues: Map<string, IssueRecord>;
  comments: Map<number, CommentRecord>;
  reviews: ReviewRecord[];
  reviewComments: ReviewCommentRecord[];
  checkRuns: Map<number, CheckRunRecord>;
  /** `${org}/${team}` lower case → member logins (lower case). */
  teams: Map<string, Set<string>>;
  checkSuites: Map<string, number>;
  commentHistory: CommentHistoryEntry[];
  reactions: ReactionRecord[];
  reviewRequests: ReviewRequestRecord[];
  pushes: PushRecord[];
  requests: RecordedRequest[];
  unhandled: Array<{ method: string; path: string }>;
  gitRequests: GitRequestRecord[];
  deliveries: DeliveryRecord[];
  errors: ErrorRecord[];
  nextId(): number;
  /** Find or register a user; ids are assigned on first sight. */
  user(login: string, type?: UserRecord['type']): UserRecord;
  repo(owner: string, name: string): RepoRecord | undefined;
  issue(repo: RepoRecord, number: number): IssueRecord | undefined;
}

/** Lower-case `owner/name`, the key of {@link GheStore.repos}. */
export function repoKey(owner: string, name: string): string {
  return `${owner}/${name}`.toLowerCase();
}

/** GitHub's timestamp format: ISO 8601 in UTC without milliseconds. */
export function isoNow(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Store a new open issue numbered next in `repo` (created and updated now, no labels or assignees)
 * and return it; a pull request is an issue whose caller then sets `pull`.
 */
export function addIssueRecord(
  store: GheStore,
  repo: RepoRecord,
  fields: { title: string; body: string | null; user: string },
): IssueRecord {
  const now = isoNow();
  const record: IssueRecord = {
    id: store.nextId(),
    repoKey: repoKey(repo.owner, repo.name),
    number: repo.nextNumber++,
    ...fields,
    labels: [],
    assignees: [],
    state: 'open',
    stateReason: null,
    createdAt: now,
    updatedAt: now,
    closedAt: null,
  };
  store.issues.set(`${record.repoKey}#${record.number}`, record);
  return record;
}

/**
 * A review of pull request `pull.number` on commit `pull.headSha`, submitted now (not stored).
 * `review.state` is the webhook spelling (default `approved`); the record keeps the REST one.
 */
export function newReviewRecord(
  store: GheStore,
  repo: RepoRecord,
  pull: { number: number; headSha: string },
  review: { reviewer: string; body?: string | null; state?: 'approved' | 'changes_requested' | 'commented' },
): ReviewRecord {
  return {
    id: store.nextId(),
    repoKey: repoKey(repo.owner, repo.name),
    pullNumber: pull.number,
    user: review.reviewer,
    body: review.body ?? null,
    state: (review.state ?? 'approved').toUpperCase() as ReviewRecord['state'],
    commitId: pull.headSha,
    submittedAt: isoNow(),
  };
}

/** Create an empty store. Ids start at 1000 so they never look like issue numbers. */
export function createGheStore(): GheStore {
  let id = 1000;
  const store: GheStore = {
    users: new Map(),
    repos: new Map(),
    issues: new Map(),
    comments: new Map(),
    reviews: [],
    reviewComments: [],
    checkRuns: new Map(),
    teams: new Map(),
    checkSuites: new Map(),
    commentHistory: [],
    reactions: [],
    reviewRequests: [],
    pushes: [],
    requests: [],
    unhandled: [],
    gitRequests: [],
    deliveries: [],
    errors: [],
    nextId: () => ++id,
    user(login, type) {
      const key = login.toLowerCase();
      let found = store.users.get(key);
      if (!found) {
        found = { login, id: store.nextId(), type: type ?? (login.endsWith('[bot]') ? 'Bot' : 'User') };
        store.users.set(key, found);
      } else if (type && found.type !== type) {
        found.type = type;
      }
      return found;
    },
    repo: (owner, name) => store.repos.get(repoKey(owner, name)),
    issue: (repo, number) => store.issues.get(`${repoKey(repo.owner, repo.name)}#${number}`),
  };
  return store;
}
