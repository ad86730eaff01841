import { z } from 'zod';
import { LEAF_PROTOCOL } from '../protocol/protocol.js';

/**
 * The keys of the admin policy and of `.github/frognano.yml`, as zod schemas whose error messages say
 * what is allowed (validation-messages.ts adds the file, the key path and the offending value).
 *
 * Two sets:
 * - {@link repoSettingsShape}: keys a repository (or its organisation's `.github` repository) may
 *   set. The admin policy may set them too, as defaults.
 * - {@link adminOnlySettingsShape}: keys only the admin policy may set. A repository file that sets
 *   one is refused with a message saying so.
 */

const LIMITS = LEAF_PROTOCOL.limits;

/**
 * Hard bounds of the numeric keys, inclusive. The Leaf limits (`src/protocol/protocol.json`, the values
 * FrogNano-4B was evaluated with) are the ceiling; admins set lower caps in the policy.
 * Units: steps (model requests), seconds, tokens, candidates, jobs, follow-up rounds.
 */
export const HARD_LIMITS = {
  maxSteps: { min: 1, max: LIMITS.max_steps },
  maxTimeSec: { min: 60, max: LIMITS.max_total_time_sec },
  maxContextTokens: { min: 4096, max: LIMITS.max_context_tokens },
  maxTokensPerTurn: { min: 256, max: LIMITS.max_completion_tokens_per_turn },
  candidates: { min: 1, max: 5 },
  concurrencyPerRepo: { min: 1, max: 50 },
  maxFollowUps: { min: 0, max: 20 },
} as const;

/** GitHub's closing keywords (https://docs.github.com/en/issues/tracking-your-work-with-issues/linking-a-pull-request-to-an-issue). */
export const CLOSING_KEYWORDS = [
  'Close',
  'Closes',
  'Closed',
  'Fix',
  'Fixes',
  'Fixed',
  'Resolve',
  'Resolves',
  'Resolved',
];

function wholeNumber(bounds: { min: number; max: number }): z.ZodOptional<z.ZodInt> {
  const error = `must be a whole number from ${bounds.min} to ${bounds.max}`;
  return z.int({ error }).min(bounds.min, { error }).max(bounds.max, { error }).optional();
}

function text(error: string, options: { max: number; pattern?: RegExp }): z.ZodString {
  let schema = z.string({ error }).min(1, { error }).max(options.max, { error });
  if (options.pattern) schema = schema.regex(options.pattern, { error });
  return schema;
}

const bool = z.boolean({ error: 'must be true or false' }).optional();

/** A GitHub label name: 1–50 characters (GitHub's limit), no surrounding spaces. */
const label = text('must be a label name of 1 to 50 characters without leading or trailing spaces', {
  max: 50,
  pattern: /^\S(.*\S)?$/s,
}).optional();

/** A shell command run by `bash -c` in the sandbox; `null` means "detect it" (undoes an org value). */
function command(what: string): z.ZodOptional<z.ZodNullable<z.ZodString>> {
  return text(`must be ${what} as text of 1 to 2000 characters, or null`, { max: 2000 })
    .nullable()
    .optional();
}

/**
 * Branch prefix: characters git accepts in a ref name, no `..`, no `//`, not starting with `/`, `-`
 * or `.` (git check-ref-format rules, reduced to a safe subset).
 */
const branchPrefix = text(
  'must be 1 to 60 characters of letters, digits, ".", "_", "-" and "/" (not starting with "/", "-" or ".", no ".." or "//"), e.g. "frognano/"',
  { max: 60, pattern: /^(?!.*\.\.)(?!.*\/\/)[A-Za-z0-9_][A-Za-z0-9._/-]*$/ },
).optional();

const instructions = text('must be text of 1 to 4000 characters', { max: 4000 }).optional();

const fixesKeyword = z
  .string({ error: `must be one of GitHub's closing keywords: ${CLOSING_KEYWORDS.join(', ')}` })
  .refine((v) => CLOSING_KEYWORDS.some((k) => k.toLowerCase() === v.toLowerCase()), {
    error: `must be one of GitHub's closing keywords: ${CLOSING_KEYWORDS.join(', ')}`,
  })
  .optional();

const pathGlob = text('must be a path glob of 1 to 200 characters, like ".github/workflows/**"', {
  max: 200,
});
const protectedPaths = z
  .array(pathGlob, { error: 'must be a list of path globs, like [".github/workflows/**", "deploy/**"]' })
  .max(100, { error: 'must be a list of at most 100 path globs' })
  .optional();

/** `org/team-slug`, or `team-slug` meaning a team of the repository's owner. */
const team = text('must be a team as "org/team-slug" or "team-slug" (a team of the repository owner)', {
  max: 140,
  pattern: /^([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\/)?[A-Za-z0-9_.-]+$/,
});
const allowedTriggerTeams = z
  .array(team, {
    error: 'must be a list of teams, like ["acme/platform"]; an empty list allows every writer',
  })
  .max(50, { error: 'must be a list of at most 50 teams' })
  .optional();

/** Kubernetes resource quantity (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/). */
const QUANTITY = /^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const quantity = z
  .preprocess(
    // YAML reads `cpu: 2` as a number; Kubernetes quantities are strings.
    (v) => (typeof v === 'number' ? String(v) : v),
    text('must be a Kubernetes quantity like "500m", "2", "4Gi"', { max: 32, pattern: QUANTITY }),
  )
  .optional();
export const quantitiesShape = { cpu: quantity, memory: quantity, 'ephemeral-storage': quantity };
const quantities = z
  .strictObject(quantitiesShape, { error: 'must be a mapping of cpu, memory and ephemeral-storage' })
  .optional();
export const resourcesShape = { requests: quantities, limits: quantities };

export const sandboxShape = {
  image: text(
    'must be a container image reference without spaces, like "registry.example.com/frognano/sandbox:1.4"',
    {
      max: 512,
      pattern: /^\S+$/,
    },
  )
    .nullable()
    .optional(),
  runtimeClassName: text('must be a RuntimeClass name (lowercase DNS name, e.g. "gvisor"), or null', {
    max: 253,
    pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
  })
    .nullable()
    .optional(),
  resources: z
    .strictObject(resourcesShape, { error: 'must be a mapping with requests and/or limits' })
    .optional(),
};

/**
 * `review:` of a repository or organisation file. `requireSecondPerson` may only be made stricter
 * there (`true`): turning it off is the admin policy's decision.
 */
export const repoReviewShape = {
  requireSecondPerson: z
    .literal(true, {
      error:
        'can only be true in a repository or organisation file (it may make the rule stricter); only the admin policy can turn it off',
    })
    .optional(),
};

/** `review:` of the admin policy. */
export const policyReviewShape = { requireSecondPerson: bool };

/** Keys a repository's `.github/frognano.yml` may set (also allowed in the admin policy). */
export const repoSettingsShape = {
  /** Label that triggers a job. */
  label,
  /** Test command (`bash -c` in the sandbox); null = detect. */
  testCommand: command('a test command'),
  /** Command run once before the agent (install dependencies…); the sandbox has no network. */
  setupCommand: command('a setup command'),
  branchPrefix,
  /** Added to the protected paths of every layer below. */
  protectedPaths,
  /** Added to the model's instruction (after the issue text). */
  instructions,
  /** Steps (model requests) per run; clamped to the admin cap. */
  maxSteps: wholeNumber(HARD_LIMITS.maxSteps),
  /** Wall-clock seconds per run; clamped to the admin cap. */
  maxTimeSec: wholeNumber(HARD_LIMITS.maxTimeSec),
  /**
   * Candidates per job (best-of-N): independent agent runs, each in its own sandbox, of which the best
   * verified one is published; clamped to the admin cap. (Retries after an infrastructure error are
   * `JOB_RETRIES`, not a policy key.)
   */
  candidates: wholeNumber(HARD_LIMITS.candidates),
  /** Deprecated name of `candidates` (see {@link DEPRECATED_KEYS}); read, renamed, warned about. */
  attempts: wholeNumber(HARD_LIMITS.candidates),
  /** Closing keyword written before the issue reference in the pull request body. */
  fixesKeyword,
  /** The human review gate: `requireSecondPerson` (a requester's approval alone does not count). */
  review: z.strictObject(repoReviewShape, { error: 'must be a mapping with requireSecondPerson' }).optional(),
};

/** Keys only the admin policy may set. */
export const adminOnlySettingsShape = {
  enabled: bool,
  maxContextTokens: wholeNumber(HARD_LIMITS.maxContextTokens),
  maxTokensPerTurn: wholeNumber(HARD_LIMITS.maxTokensPerTurn),
  concurrencyPerRepo: wholeNumber(HARD_LIMITS.concurrencyPerRepo),
  /** Follow-up rounds per pull request the app opened (reviewer feedback, issue 11); 0 = none. */
  maxFollowUps: wholeNumber(HARD_LIMITS.maxFollowUps),
  sandbox: z
    .strictObject(sandboxShape, { error: 'must be a mapping with image, resources, runtimeClassName' })
    .optional(),
  allowedTriggerTeams,
  allowDraftOnFailingTests: bool,
};

/** All keys of one layer of the admin policy (`defaults` or one rule). */
export const policySettingsShape = {
  ...repoSettingsShape,
  ...adminOnlySettingsShape,
  review: z
    .strictObject(policyReviewShape, { error: 'must be a mapping with requireSecondPerson' })
    .optional(),
};

export const repoSettingsSchema = z.strictObject(repoSettingsShape, {
  error: 'must be a mapping of keys to values',
});
export const policySettingsSchema = z.strictObject(policySettingsShape, {
  error: 'must be a mapping of keys to values',
});

/** Values of a repository or organisation `.github/frognano.yml`. */
export type RepoSettings = z.output<typeof repoSettingsSchema>;
/** Values of one layer of the admin policy. */
export type PolicySettings = z.output<typeof policySettingsSchema>;
/** Kubernetes-style resource quantities of the sandbox. */
export type ResourceQuantities = { cpu?: string; memory?: string; 'ephemeral-storage'?: string };

/**
 * Keys still accepted under an old name, old → new. The schemas accept both; {@link renameDeprecatedKeys}
 * turns the old into the new one and says so. Messages listing the allowed keys name the new ones only.
 */
export const DEPRECATED_KEYS: Readonly<Record<string, string>> = { attempts: 'candidates' };

const current = (keys: string[]): readonly string[] => keys.filter((k) => !(k in DEPRECATED_KEYS));

/** Keys of a repository file (deprecated names left out: they are for messages). */
export const REPO_KEYS: readonly string[] = current(Object.keys(repoSettingsShape));
export const ADMIN_ONLY_KEYS: readonly string[] = Object.keys(adminOnlySettingsShape);
/** Keys of one layer of the admin policy (deprecated names left out). */
export const POLICY_SETTINGS_KEYS: readonly string[] = current(Object.keys(policySettingsShape));

/**
 * One layer's settings with the {@link DEPRECATED_KEYS} renamed, and a warning per old key used, e.g.
 *
 *     .github/frognano.yml: attempts: is deprecated, write "candidates: 2" instead (the same meaning: candidates per job, best-of-N)
 *     policy.yaml: defaults.attempts: is deprecated and ignored: "candidates" is also set and wins (candidates: 3); remove "attempts"
 *
 * When both names are given the new one wins.
 *
 * @param settings a parsed layer (a repository file, the policy's `defaults` or one rule); not changed.
 * @param where how the warning names the layer: the file, then `: ` and the key path prefix when the
 *   layer is nested (`policy.yaml: defaults.`), else the file and `: `.
 */
export function renameDeprecatedKeys<T extends Record<string, unknown>>(
  settings: T,
  where: string,
): { settings: T; warnings: string[] } {
  const out: Record<string, unknown> = { ...settings };
  const warnings: string[] = [];
  for (const [old, key] of Object.entries(DEPRECATED_KEYS)) {
    if (out[old] === undefined) continue;
    const value = out[old];
    delete out[old];
    if (out[key] === undefined) {
      out[key] = value;
      warnings.push(
        `${where}${old}: is deprecated, write "${key}: ${String(value)}" instead (the same meaning: candidates per job, best-of-N)`,
      );
    } else {
      warnings.push(
        `${where}${old}: is deprecated and ignored: "${key}" is also set and wins (${key}: ${String(out[key])}); remove "${old}"`,
      );
    }
  }
  return { settings: out as T, warnings };
}

/** Keys people put at the top level that belong under `sandbox:`. */
export const SANDBOX_KEYS: readonly string[] = Object.keys(sandboxShape);
