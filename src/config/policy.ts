import picomatch from 'picomatch';
import { z } from 'zod';
import { AppError, httpStatusOf, isRetryableHttpStatus } from '../app-error.js';
import { LEAF_PROTOCOL } from '../protocol/protocol.js';
import type { OctokitRequester, RepoConfig } from './repo-config.js';
import {
  HARD_LIMITS,
  POLICY_SETTINGS_KEYS,
  SANDBOX_KEYS,
  policyReviewShape,
  policySettingsShape,
  quantitiesShape,
  renameDeprecatedKeys,
  resourcesShape,
  sandboxShape,
  type PolicySettings,
  type ResourceQuantities,
} from './settings-schema.js';
import { configInvalid, formatIssues, parseYamlText } from './validation-messages.js';

/**
 * The admin policy (DESIGN.md "Configuration") and the resolution of the effective policy of one
 * repository from four layers, later layers winning:
 *
 *   built-in defaults → admin policy (`defaults`, then every matching rule in file order)
 *   → org `.github/frognano.yml` (in `{owner}/.github`) → repo `.github/frognano.yml`
 *
 * Org and repo layers may only set repository keys (settings-schema.ts); `maxSteps`, `maxTimeSec` and
 * `candidates` from them are clamped to the value the admin layers resolved (the admin value is both
 * the default and the cap). `protectedPaths` and `instructions` add up across all layers instead of
 * replacing each other, so no layer can remove a protection or an instruction of a layer below.
 *
 * The policy's `eval` section names the defaults of `frognano-bot eval` (candidates, limits,
 * concurrency; {@link resolveEvalDefaults}); it applies to evaluations only, never to jobs.
 */

const OWNER_REPO_GLOB_ERROR =
  'must be an owner/name glob like "acme/*", "acme/widgets" or "*/*", or a list of them';

function isOwnerRepoGlob(glob: string): boolean {
  if (!/^\S+$/.test(glob) || !(glob.includes('/') || glob === '**')) return false;
  try {
    picomatch.makeRe(glob);
    return true;
  } catch {
    return false;
  }
}

const glob = z
  .string({ error: OWNER_REPO_GLOB_ERROR })
  .max(200, { error: OWNER_REPO_GLOB_ERROR })
  .refine(isOwnerRepoGlob, { error: OWNER_REPO_GLOB_ERROR });

const ruleSchema = z.strictObject(
  {
    /** owner/name globs (picomatch, case-insensitive); the rule applies when any matches. */
    match: z.union([glob, z.array(glob).min(1)], { error: OWNER_REPO_GLOB_ERROR }),
    ...policySettingsShape,
  },
  { error: 'must be a mapping with "match" and the keys to set for matching repositories' },
);

/** Bounds of the `eval` section's keys, inclusive. Units: candidates, steps, seconds, tasks. */
export const EVAL_LIMITS = {
  candidates: HARD_LIMITS.candidates,
  maxSteps: HARD_LIMITS.maxSteps,
  maxTimeSec: HARD_LIMITS.maxTimeSec,
  concurrency: { min: 1, max: 32 },
  testTimeoutSec: { min: 60, max: 7200 },
} as const;

function evalNumber(bounds: { min: number; max: number }): z.ZodOptional<z.ZodInt> {
  const error = `must be a whole number from ${bounds.min} to ${bounds.max}`;
  return z.int({ error }).min(bounds.min, { error }).max(bounds.max, { error }).optional();
}

/** The `eval` section: defaults of `frognano-bot eval` (issue 15); command-line options win. */
const evalShape = {
  candidates: evalNumber(EVAL_LIMITS.candidates),
  maxSteps: evalNumber(EVAL_LIMITS.maxSteps),
  maxTimeSec: evalNumber(EVAL_LIMITS.maxTimeSec),
  concurrency: evalNumber(EVAL_LIMITS.concurrency),
  testTimeoutSec: evalNumber(EVAL_LIMITS.testTimeoutSec),
};

const policySchema = z.strictObject(
  {
    eval: z.strictObject(evalShape, { error: 'must be a mapping of evaluation defaults' }).optional(),
    defaults: z
      .strictObject(policySettingsShape, { error: 'must be a mapping of keys to values' })
      .optional(),
    rules: z.array(ruleSchema, { error: 'must be a list of rules, each with "match"' }).max(1000).optional(),
  },
  { error: 'must be a mapping with "defaults", "rules" and/or "eval"' },
);

/** Evaluation defaults as the admin policy names them (absent keys: {@link BUILT_IN_EVAL_DEFAULTS}). */
export type EvalPolicy = Partial<Record<keyof typeof evalShape, number>>;

/** One rule of the admin policy: applies `settings` to repositories matching any of `match`. */
export interface PolicyRule {
  /** owner/name globs (picomatch syntax, matched case-insensitively against `owner/name`). */
  match: string[];
  settings: PolicySettings;
}

/** A parsed, validated admin policy (plain data; serialisable to JSON). */
export interface AdminPolicy {
  /** Where it came from, e.g. the POLICY_FILE path or `built-in`. */
  source: string;
  defaults: PolicySettings;
  /** In file order: later matching rules override earlier ones. */
  rules: PolicyRule[];
  /** The `eval` section, when the file has one. */
  eval?: EvalPolicy;
  /**
   * Deprecation warnings (an old key name used, see settings-schema.ts `DEPRECATED_KEYS`), in
   * validation-message style; absent when there are none. The policy store logs them.
   */
  warnings?: string[];
}

/** The policy used when no POLICY_FILE is configured: built-in defaults only. */
export const EMPTY_ADMIN_POLICY: AdminPolicy = { source: 'built-in', defaults: {}, rules: [] };

/** Keys allowed at a path of the policy file, for "unknown key" messages. */
function policyKnownKeys(path: readonly PropertyKey[]): readonly string[] | undefined {
  const settingsLevel = settingsDepth(path);
  if (path.length === 0) return ['defaults', 'rules', 'eval'];
  if (path.length === 1 && path[0] === 'eval') return Object.keys(evalShape);
  if (settingsLevel === path.length)
    return path[0] === 'rules' ? ['match', ...POLICY_SETTINGS_KEYS] : POLICY_SETTINGS_KEYS;
  const rest = path.slice(settingsLevel);
  if (rest.length === 1 && rest[0] === 'sandbox') return Object.keys(sandboxShape);
  if (rest.length === 1 && rest[0] === 'review') return Object.keys(policyReviewShape);
  if (rest.length === 2 && rest[1] === 'resources') return Object.keys(resourcesShape);
  if (rest.length === 3 && rest[1] === 'resources') return Object.keys(quantitiesShape);
  return undefined;
}

/** Length of the path prefix that reaches a settings mapping (`defaults` or `rules[i]`). */
function settingsDepth(path: readonly PropertyKey[]): number {
  if (path[0] === 'defaults') return 1;
  if (path[0] === 'rules' && typeof path[1] === 'number') return 2;
  return -1;
}

function policyRefusedKey(path: readonly PropertyKey[], key: string): string | undefined {
  if (path.length === 0 && POLICY_SETTINGS_KEYS.includes(key)) {
    return 'must be set under "defaults:" (for every repository) or in a rule (for matching repositories)';
  }
  if (settingsDepth(path) === path.length && SANDBOX_KEYS.includes(key)) {
    return `belongs under "sandbox:" (write sandbox.${key})`;
  }
  return undefined;
}

/**
 * Parse and validate an admin policy file (YAML).
 *
 * Shape: `{ defaults?: settings, rules?: [{ match: glob | glob[], ...settings }] }` where settings are
 * the keys of settings-schema.ts (repository keys and admin-only keys).
 *
 * @param text YAML text; an empty file is a valid policy that changes nothing.
 * @param source how messages name the file (the POLICY_FILE path).
 * @throws AppError `CONFIG_INVALID` (not retryable) with `details.messages: string[]`.
 */
export function parseAdminPolicy(text: string, source: string): AdminPolicy {
  const parsed = parseYamlText(text, source);
  if (!parsed.ok) throw configInvalid(source, parsed.messages);
  const result = policySchema.safeParse(parsed.value, { reportInput: true });
  if (!result.success) {
    throw configInvalid(
      source,
      formatIssues(source, result.error.issues, { knownKeys: policyKnownKeys, refusedKey: policyRefusedKey }),
    );
  }
  const warnings: string[] = [];
  const renamed = (settings: PolicySettings, path: string): PolicySettings => {
    const out = renameDeprecatedKeys(settings, `${source}: ${path}.`);
    warnings.push(...out.warnings);
    return out.settings;
  };
  return {
    source,
    ...(result.data.eval ? { eval: result.data.eval } : {}),
    defaults: renamed(result.data.defaults ?? {}, 'defaults'),
    rules: (result.data.rules ?? []).map(({ match, ...settings }, i) => ({
      match: typeof match === 'string' ? [match] : match,
      settings: renamed(settings, `rules[${i}]`),
    })),
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/** Sandbox settings of the effective policy. */
export interface EffectiveSandbox {
  /** Container image of the sandbox pod; `null` = the sandbox driver's default. */
  image: string | null;
  /** Kubernetes requests and limits (quantity strings, e.g. `500m`, `4Gi`). */
  resources: { requests: ResourceQuantities; limits: ResourceQuantities };
  /** RuntimeClass of the pod (e.g. `gvisor`); `null` = the cluster default. */
  runtimeClassName: string | null;
}

/** A repository value lowered to the admin cap (mentioned in the status comment). */
export interface Clamp {
  key: 'maxSteps' | 'maxTimeSec' | 'candidates';
  /** What the org or repo file asked for. */
  requested: number;
  /** What applies (equals `cap`). */
  applied: number;
  cap: number;
  /** File that asked (a {@link RepoConfig.source}). */
  source: string;
  /** Policy layer that set the cap, e.g. `policy:rule[1] (acme/*)`. */
  capSource: string;
}

/**
 * Everything a job needs to know, resolved for one repository. Units: steps, seconds, tokens, candidates.
 *
 * `sources` says where each value came from, keyed by key path (`maxSteps`, `sandbox.image`,
 * `sandbox.resources.limits.memory`…): `default`, `policy:defaults`, `policy:rule[i] (glob)`,
 * `org` or `repo`. Additive keys (`protectedPaths`, `instructions`) list every contributing layer
 * joined with ` + `. A clamped value names the layer that set the cap.
 */
export interface EffectivePolicy {
  /** `owner/name`, as given. */
  repo: string;
  /** Whether the bot may run on this repository (admin-only). */
  enabled: boolean;
  /** Label that triggers a job. */
  label: string;
  /** Steps (model requests) per trajectory. */
  maxSteps: number;
  /** Wall-clock limit of a trajectory, seconds. */
  maxTimeSec: number;
  /** Context window, tokens. */
  maxContextTokens: number;
  /** Completion tokens per step. */
  maxTokensPerTurn: number;
  /**
   * Candidates per job (best-of-N, issue 6): independent agent runs, each in its own sandbox, of which
   * the best verified one is published. Default 1. (Retries after an infrastructure error are
   * `JOB_RETRIES`.) The old key `attempts` is read as this one, with a deprecation warning.
   */
  candidates: number;
  /** Jobs of this repository running at once (see queue/concurrency-limiter.ts). */
  concurrencyPerRepo: number;
  /**
   * Follow-up rounds (reviewer feedback starts one, issue 11) per pull request the app opened;
   * past it the app says so and queues nothing. Default 3.
   */
  maxFollowUps: number;
  sandbox: EffectiveSandbox;
  /** Teams (`org/slug`) whose members may trigger; empty = every sender with write access. */
  allowedTriggerTeams: string[];
  /** Path globs a patch must not touch (built-in + admin + org + repo). */
  protectedPaths: string[];
  /** Whether a result with failing tests may still open a draft pull request. */
  allowDraftOnFailingTests: boolean;
  /** Test command; `null` = detect from the repository's files. */
  testCommand: string | null;
  /** Setup command run before the agent; `null` = none. */
  setupCommand: string | null;
  /** Prefix of the branches the bot pushes. */
  branchPrefix: string;
  /** Extra instruction text for the model (all layers, blank-line separated); `null` = none. */
  instructions: string | null;
  /** Closing keyword in the pull request body (`Fixes #12`). */
  fixesKeyword: string;
  /**
   * The human review gate. `requireSecondPerson` (default true): the approval of a person who asked
   * for the run (labeller, feedback author) alone does not turn the check green. Org and repository
   * files may only set it to true; the admin policy may turn it off.
   */
  review: { requireSecondPerson: boolean };
  clamps: Clamp[];
  sources: Record<string, string>;
}

/** Protected paths that always apply (CI, CODEOWNERS in the three places GitHub reads it, and this bot's config). */
export const BUILT_IN_PROTECTED_PATHS: readonly string[] = [
  '.github/workflows/**',
  '.github/actions/**',
  'CODEOWNERS',
  '.github/CODEOWNERS',
  'docs/CODEOWNERS',
  '.github/frognano.yml',
];

/**
 * Built-in defaults (the first layer). Leaf limits come from `LEAF_PROTOCOL.limits`; sandbox
 * resources are a conservative size for a test suite of a mid-sized repository.
 */
export const BUILT_IN_DEFAULTS: Readonly<Omit<EffectivePolicy, 'repo' | 'clamps' | 'sources'>> =
  Object.freeze({
    enabled: true,
    label: 'frognano',
    maxSteps: LEAF_PROTOCOL.limits.max_steps,
    maxTimeSec: LEAF_PROTOCOL.limits.max_total_time_sec,
    maxContextTokens: LEAF_PROTOCOL.limits.max_context_tokens,
    maxTokensPerTurn: LEAF_PROTOCOL.limits.max_completion_tokens_per_turn,
    candidates: 1,
    concurrencyPerRepo: 1,
    maxFollowUps: 3,
    sandbox: {
      image: null,
      resources: {
        requests: { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '2Gi' },
        limits: { cpu: '2', memory: '4Gi', 'ephemeral-storage': '10Gi' },
      },
      runtimeClassName: null,
    },
    allowedTriggerTeams: [],
    protectedPaths: [...BUILT_IN_PROTECTED_PATHS],
    allowDraftOnFailingTests: false,
    testCommand: null,
    setupCommand: null,
    branchPrefix: 'frognano/',
    instructions: null,
    fixesKeyword: 'Fixes',
    review: { requireSecondPerson: true },
  });

/** Defaults of `frognano-bot eval` when the policy has no `eval` section. Units as in {@link EVAL_LIMITS}. */
export const BUILT_IN_EVAL_DEFAULTS: Readonly<Required<EvalPolicy>> = Object.freeze({
  candidates: 1,
  maxSteps: LEAF_PROTOCOL.limits.max_steps,
  maxTimeSec: LEAF_PROTOCOL.limits.max_total_time_sec,
  concurrency: 1,
  testTimeoutSec: 1800,
});

/** The evaluation defaults of a policy: its `eval` section over {@link BUILT_IN_EVAL_DEFAULTS}. */
export function resolveEvalDefaults(policy: AdminPolicy = EMPTY_ADMIN_POLICY): Required<EvalPolicy> {
  return { ...BUILT_IN_EVAL_DEFAULTS, ...policy.eval };
}

/** Keys whose values add up across layers instead of replacing each other. */
const ADDITIVE_KEYS = new Set(['protectedPaths', 'instructions']);
/** Keys an org/repo layer may set only up to the admin-resolved value. */
const CLAMPED_KEYS = ['maxSteps', 'maxTimeSec', 'candidates'] as const;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `{sandbox: {image: x}}` → `[['sandbox.image', x]]`; lists and scalars are leaves; undefined skipped. */
function flatten(value: Record<string, unknown>, prefix = ''): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue;
    const path = prefix + key;
    if (isPlainObject(v)) out.push(...flatten(v, `${path}.`));
    else out.push([path, Array.isArray(v) ? [...(v as unknown[])] : v]);
  }
  return out;
}

function unflatten(flat: Map<string, unknown>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [path, value] of flat) {
    const parts = path.split('.');
    let node = root;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (isPlainObject(next)) node = next;
      else node = node[part] = {};
    }
    node[parts[parts.length - 1] as string] = value;
  }
  return root;
}

const matcherCache = new WeakMap<PolicyRule, (repo: string) => string | undefined>();

/** The first glob of `rule` matching `repo` (case-insensitive), or undefined. */
function matchRule(rule: PolicyRule, repo: string): string | undefined {
  let matcher = matcherCache.get(rule);
  if (!matcher) {
    const compiled = rule.match.map((g) => [g, picomatch(g, { nocase: true, dot: true })] as const);
    matcher = (r) => compiled.find(([, test]) => test(r))?.[0];
    matcherCache.set(rule, matcher);
  }
  return matcher(repo);
}

/**
 * Resolve the effective policy of one repository (pure; no I/O).
 *
 * Order: built-in defaults → `policy.defaults` → each rule whose `match` matches `repo`, in file
 * order (a later matching rule overrides the keys it sets; keys it does not set keep the earlier
 * value) → `orgConfig` → `repoConfig`. For `maxSteps`, `maxTimeSec` and `candidates`, the value after
 * the admin layers is the cap: an org/repo value above it is lowered to it and reported in `clamps`.
 * `protectedPaths` is the union of all layers (built-in first); `instructions` are all layers' texts
 * joined by a blank line.
 *
 * @param input.repo `owner/name`; matched case-insensitively.
 * @param input.orgConfig, input.repoConfig from {@link loadRepoConfigs}; they hold repository keys
 *   only (validated by parseRepoConfig), so admin-only keys cannot arrive through them.
 */
export function resolveEffectivePolicy(input: {
  policy: AdminPolicy;
  repo: string;
  orgConfig?: RepoConfig;
  repoConfig?: RepoConfig;
}): EffectivePolicy {
  const values = new Map<string, unknown>(flatten(BUILT_IN_DEFAULTS as unknown as Record<string, unknown>));
  const sources: Record<string, string> = {};
  for (const key of values.keys()) sources[key] = 'default';
  sources.instructions = '';
  const additive: { protectedPaths: string[]; instructions: string[] } = {
    protectedPaths: [...BUILT_IN_PROTECTED_PATHS],
    instructions: [],
  };

  const apply = (settings: Record<string, unknown>, layer: string): void => {
    for (const [key, value] of flatten(settings)) {
      if (ADDITIVE_KEYS.has(key)) {
        if (key === 'protectedPaths') additive.protectedPaths.push(...(value as string[]));
        else if ((value as string).trim() !== '') additive.instructions.push((value as string).trim());
        sources[key] = sources[key] ? `${sources[key]} + ${layer}` : layer;
        continue;
      }
      values.set(key, value);
      sources[key] = layer;
    }
  };

  apply(input.policy.defaults, 'policy:defaults');
  const target = input.repo.toLowerCase();
  input.policy.rules.forEach((rule, i) => {
    const glob = matchRule(rule, target);
    if (glob !== undefined) apply(rule.settings, `policy:rule[${i}] (${glob})`);
  });

  const caps = new Map(
    CLAMPED_KEYS.map((k) => [k, { cap: values.get(k) as number, source: sources[k] ?? '' }]),
  );
  if (input.orgConfig) apply(input.orgConfig.settings, 'org');
  if (input.repoConfig) apply(input.repoConfig.settings, 'repo');

  const clamps: Clamp[] = [];
  for (const key of CLAMPED_KEYS) {
    const requested = values.get(key) as number;
    const cap = caps.get(key);
    if (!cap || requested <= cap.cap) continue;
    const file = sources[key] === 'repo' ? input.repoConfig?.source : input.orgConfig?.source;
    clamps.push({
      key,
      requested,
      applied: cap.cap,
      cap: cap.cap,
      source: file ?? sources[key] ?? '',
      capSource: cap.source,
    });
    values.set(key, cap.cap);
    sources[key] = cap.source;
  }

  const resolved = unflatten(values) as Omit<EffectivePolicy, 'repo' | 'clamps' | 'sources'>;
  return {
    ...resolved,
    repo: input.repo,
    fixesKeyword: canonicalKeyword(resolved.fixesKeyword),
    protectedPaths: [...new Set(additive.protectedPaths)],
    instructions: additive.instructions.length > 0 ? additive.instructions.join('\n\n') : null,
    clamps,
    sources: { ...sources, instructions: sources.instructions || 'default' },
  };
}

/** `fixes` → `Fixes` (the keyword is validated case-insensitively). */
function canonicalKeyword(keyword: string): string {
  return keyword.charAt(0).toUpperCase() + keyword.slice(1).toLowerCase();
}

/**
 * One line for people (the status comment) about a clamp, e.g.
 * `maxSteps: .github/frognano.yml asks for 300, above the admin cap of 150 (policy:defaults); 150 applies`.
 */
export function formatClamp(clamp: Clamp): string {
  return `${clamp.key}: ${clamp.source} asks for ${clamp.requested}, above the admin cap of ${clamp.cap} (${clamp.capSource}); ${clamp.applied} applies`;
}

/** Outcome of {@link checkTriggerAllowed}. */
export type TriggerDecision =
  | { allowed: true }
  | {
      allowed: false;
      /** `REPO_NOT_ALLOWED`: the policy does not enable the repository; `SENDER_NOT_IN_TEAMS`. */
      code: 'REPO_NOT_ALLOWED' | 'SENDER_NOT_IN_TEAMS';
      /** A sentence a person can act on (goes into the status comment). */
      reason: string;
    };

/** How {@link checkTriggerAllowed} learns team membership: one of the two functions. */
export type TeamLookup =
  | {
      /** Teams of `user`, as `org/team-slug` (a bare slug is taken as a team of the repository owner). */
      teamsOf: (user: string) => Promise<string[]>;
      isTeamMember?: undefined;
    }
  | {
      /** Whether `user` is an active member of team `teamSlug` of organisation `org`. */
      isTeamMember: (org: string, teamSlug: string, user: string) => Promise<boolean>;
      teamsOf?: undefined;
    };

/**
 * Whether `sender` may trigger the bot on `repo` by policy: the repository must be enabled, and when
 * `allowedTriggerTeams` is not empty the sender must belong to one of the teams. (That the sender has
 * write access is checked by the webhook handler, before this.)
 *
 * @param policy the admin policy (resolved here for `repo`, admin layers only: the keys involved are
 *   admin-only) or an already resolved {@link EffectivePolicy}.
 * @throws whatever the team lookup throws (e.g. AppError `GITHUB_API_ERROR`).
 */
export async function checkTriggerAllowed(
  policy: AdminPolicy | EffectivePolicy,
  input: { repo: string; sender: string } & TeamLookup,
): Promise<TriggerDecision> {
  const effective = 'sources' in policy ? policy : resolveEffectivePolicy({ policy, repo: input.repo });
  if (!effective.enabled) {
    return {
      allowed: false,
      code: 'REPO_NOT_ALLOWED',
      reason: `FrogNano bot is not enabled for ${input.repo} by the admin policy (${effective.sources.enabled ?? 'default'}). Ask your platform admins to enable this repository.`,
    };
  }
  const teams = effective.allowedTriggerTeams;
  if (teams.length === 0) return { allowed: true };
  const owner = input.repo.split('/')[0] ?? '';
  const qualified = teams.map((t) => (t.includes('/') ? t : `${owner}/${t}`));
  if (input.teamsOf) {
    const mine = new Set(
      (await input.teamsOf(input.sender)).map((t) => (t.includes('/') ? t : `${owner}/${t}`).toLowerCase()),
    );
    if (qualified.some((t) => mine.has(t.toLowerCase()))) return { allowed: true };
  } else {
    for (const t of qualified) {
      const [org = '', slug = ''] = t.split('/');
      if (await input.isTeamMember(org, slug, input.sender)) return { allowed: true };
    }
  }
  return {
    allowed: false,
    code: 'SENDER_NOT_IN_TEAMS',
    reason: `@${input.sender} is not a member of a team allowed to trigger FrogNano bot on ${input.repo} (allowed: ${qualified.join(', ')}). Ask a member of one of these teams to add the label, or ask your platform admins to add your team.`,
  };
}

/**
 * Team membership through the GitHub REST API:
 * `GET /orgs/{org}/teams/{team_slug}/memberships/{username}` (https://docs.github.com/en/rest/teams/members#get-team-membership-for-a-user):
 * 200 with `state: active` = member; 404 = not a member. Needs the App permission "Members: read"
 * (organisation).
 *
 * @throws AppError `GITHUB_API_ERROR` for other answers (retryable for 5xx and 429).
 */
export function createTeamMembershipCheck(
  octokit: OctokitRequester,
): (org: string, teamSlug: string, user: string) => Promise<boolean> {
  const schema = z.object({ state: z.string() });
  return async (org, teamSlug, user) => {
    try {
      const { data } = await octokit.request('GET /orgs/{org}/teams/{team_slug}/memberships/{username}', {
        org,
        team_slug: teamSlug,
        username: user,
      });
      return schema.parse(data).state === 'active';
    } catch (err) {
      const status = httpStatusOf(err);
      if (status === 404) return false;
      throw new AppError(
        'GITHUB_API_ERROR',
        `could not check membership of ${user} in team ${org}/${teamSlug}`,
        {
          retryable: isRetryableHttpStatus(status),
          cause: err,
          details: { status },
        },
      );
    }
  };
}
