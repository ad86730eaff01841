import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { z } from 'zod';

/**
 * The run record of a job and the entries appended after it (DESIGN.md "Security model": every job
 * leaves a run record, hash-chained per repository). Versioned by the `schema` field of each body;
 * a reader refuses a version it does not know instead of guessing.
 *
 * Hashes are SHA-256 in lower-case hex of the RFC 8785 canonical JSON (JCS, through the
 * `canonicalize` package): the same content hashes the same whatever key order or whitespace a
 * writer used, so anyone can recompute them with any JCS implementation.
 */

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 in lower-case hex');
const isoTime = z.string().datetime({ offset: true });

/** One side of the tests (base tree or patched tree), without the full output (that is a stored log). */
export const recordedTestRunSchema = z.object({
  command: z.string(),
  source: z.string(),
  exitCode: z.number().int().nullable(),
  passed: z.boolean(),
  timedOut: z.boolean(),
  durationMs: z.number().nonnegative(),
  /** Per-test results (id, status, message), when the runner gave a report. */
  tests: z.array(z.object({ id: z.string(), status: z.string() }).passthrough()).nullable(),
  /** Store key of the full output log, when it was uploaded. */
  logKey: z.string().nullable(),
});

/** A file of the job kept in the store (trajectory, test log, patch). */
export const storedFileSchema = z.object({
  name: z.string(),
  key: z.string(),
  sha256: sha256Hex,
  bytes: z.number().int().nonnegative(),
});

/** The body of a `record` entry: one per job run (and per follow-up round). */
export const runRecordSchema = z.object({
  schema: z.literal('frognano.run-record/1'),
  /** Unique per run of the job (a retried job has one per try): de-duplicates a re-sent record. */
  runId: z.string().min(1),
  jobId: z.string().min(1),
  /** `owner/name` as GitHub spells it. */
  repository: z.string(),
  issueNumber: z.number().int().nullable(),
  trigger: z.object({
    login: z.string(),
    userId: z.number().int().nullable(),
    deliveryId: z.string(),
    label: z.string().nullable(),
    enqueuedAt: isoTime.nullable(),
    /** The sender's permission on the repository as the API answered (collaborator permission). */
    permission: z
      .object({
        permission: z.string(),
        roleName: z.string().nullable(),
        checkedAt: isoTime,
      })
      .nullable(),
  }),
  startedAt: isoTime,
  finishedAt: isoTime,
  worker: z.object({ hostname: z.string(), version: z.string() }),
  /** The effective policy of the repository, its digest (sha256 of its JCS form) and the clamps. */
  policy: z
    .object({
      sha256: sha256Hex,
      effective: z.record(z.string(), z.unknown()),
      clamps: z.array(z.unknown()),
    })
    .nullable(),
  model: z.object({
    /** MODEL_NAME: the name the worker asked for. */
    name: z.string(),
    /** MODEL_URL without credentials. */
    url: z.string(),
    /** The served model's entry of `GET /v1/models` (OpenAI-compatible list), as the server answered. */
    servedEntry: z.record(z.string(), z.unknown()).nullable(),
    /** SGLang's `GET /get_model_info` answer (model_path, tokenizer_path, weight_version…), when it answers. */
    modelInfo: z.record(z.string(), z.unknown()).nullable(),
    /** Why either was not obtained, for a reader. */
    notes: z.array(z.string()),
  }),
  protocol: z.object({ file: z.string(), sha256: sha256Hex }),
  instruction: z.object({ sha256: sha256Hex, chars: z.number().int().nonnegative() }).nullable(),
  /** The trajectory, test logs and patch of the job, as stored. */
  files: z.array(storedFileSchema),
  change: z
    .object({
      /** sha256 of the patch text the agent produced and the checks verified (`git diff` format). */
      patchSha256: sha256Hex,
      patchBytes: z.number().int().nonnegative(),
      diffstat: z.string(),
      baseSha: z.string().nullable(),
      /** The pushed commit, when one was pushed. */
      commit: z
        .object({
          sha: z.string(),
          /** sha256 of `git diff --binary --full-index <baseSha> <sha>`: recomputable from the repository. */
          diffSha256: sha256Hex,
          diffCommand: z.string(),
        })
        .nullable(),
    })
    .nullable(),
  tests: z
    .object({
      base: recordedTestRunSchema.nullable(),
      head: recordedTestRunSchema.nullable(),
      comparison: z.record(z.string(), z.unknown()).nullable(),
      verdict: z.string().nullable(),
    })
    .nullable(),
  outcome: z.object({ kind: z.string(), headline: z.string(), detail: z.record(z.string(), z.unknown()) }),
  pullRequest: z
    .object({ number: z.number().int(), url: z.string(), checkRunId: z.number().int().nullable() })
    .nullable(),
});
export type RunRecord = z.infer<typeof runRecordSchema>;

/** The body of an `approval` entry: a review that turned the human review check. */
export const approvalSchema = z.object({
  schema: z.literal('frognano.approval/1'),
  /** `review-<id>`, or a random id when GitHub gave none: de-duplicates a redelivered webhook. */
  id: z.string().min(1),
  reviewer: z.string(),
  permission: z.string(),
  roleName: z.string().nullable(),
  /** The commit the review approved (the pull request's head at the time). */
  commit: z.string(),
  pullNumber: z.number().int(),
  reviewUrl: z.string().nullable(),
  checkRunId: z.number().int(),
  /** When GitHub says the review was submitted, if the payload said. */
  submittedAt: isoTime.nullable(),
  deliveryId: z.string().nullable(),
});
export type Approval = z.infer<typeof approvalSchema>;

/** The body of a `sweep` entry: what a retention sweep removed from the chain, and why. */
export const sweepSchema = z.object({
  schema: z.literal('frognano.retention-sweep/1'),
  id: z.string().min(1),
  retentionDays: z.number().positive(),
  /** Entries older than this were removed. */
  cutoff: isoTime,
  reason: z.string(),
  removed: z.array(
    z.object({
      seq: z.number().int(),
      kind: z.string(),
      jobId: z.string().nullable(),
      at: isoTime,
      hash: sha256Hex,
    }),
  ),
  /** Job folders deleted with them (trajectories, logs). */
  jobs: z.array(z.string()),
  /** Where the chain starts after the sweep: the first kept entry and the hash it must carry as `prevHash`. */
  chainStart: z.object({ seq: z.number().int().nonnegative(), prevHash: sha256Hex.nullable() }),
});
export type Sweep = z.infer<typeof sweepSchema>;

export const ENTRY_KINDS = ['record', 'approval', 'sweep'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/** A chained entry as stored: the envelope, its body and `hash` over everything else. */
export const chainEntrySchema = z.object({
  v: z.literal(1),
  /** `owner/name`, lower case: the chain it belongs to. */
  repo: z.string(),
  /** 0-based position in the repository's chain. */
  seq: z.number().int().nonnegative(),
  /** `hash` of the entry before it; `null` for the first entry of a chain. */
  prevHash: sha256Hex.nullable(),
  at: isoTime,
  kind: z.enum(ENTRY_KINDS),
  jobId: z.string().nullable(),
  body: z.record(z.string(), z.unknown()),
  /** sha256 of the JCS form of this object without `hash`. */
  hash: sha256Hex,
});
export type ChainEntry = z.infer<typeof chainEntrySchema>;

/** A chain link (`chains/<owner>/<repo>/<seq>.json`): where entry `seq` lives and its hash. */
export const chainLinkSchema = z.object({
  seq: z.number().int().nonnegative(),
  key: z.string(),
  kind: z.enum(ENTRY_KINDS),
  jobId: z.string().nullable(),
  hash: sha256Hex,
});
export type ChainLink = z.infer<typeof chainLinkSchema>;

/** RFC 8785 canonical JSON of `value`. @throws TypeError for values JSON cannot hold. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no JSON form');
  return text;
}

/** sha256 (hex) of a string or bytes. */
export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The hash of an entry: sha256 of the JCS form of everything but `hash`. */
export function entryHash(entry: Omit<ChainEntry, 'hash'> | ChainEntry): string {
  const { hash: _hash, ...rest } = entry as ChainEntry;
  return sha256(canonicalJson(rest));
}

/** The sha256 digest of a policy object (JCS form): equal policies give equal digests. */
export function policyDigest(policy: unknown): string {
  return sha256(canonicalJson(policy));
}
