import { AppError } from '../app-error.js';
import type { ChainLock } from './chain-lock.js';
import type { RecordStore } from './record-store.js';
import {
  chainEntrySchema,
  chainLinkSchema,
  entryHash,
  sweepSchema,
  type ChainEntry,
  type ChainLink,
  type EntryKind,
} from './run-record.js';

/**
 * The per-repository hash chain of run records and appended entries, on a {@link RecordStore}:
 *
 * - `jobs/<job id>/<seq>-<kind>.json` — an entry of a job (its record, approvals), one folder per job;
 *   `repos/<owner>/<repo>/<seq>-<kind>.json` — an entry of no job (retention sweeps);
 * - `chains/<owner>/<repo>/<seq>.json` — the link: where entry `seq` lives and its hash;
 * - `chains/<owner>/<repo>/head.json` — the last link's `seq` and `hash`.
 *
 * Each entry carries `prevHash` (the previous entry's hash) and its own `hash` (of its JCS form);
 * nothing is rewritten in place. Appends hold the repository's {@link ChainLock}, so concurrent
 * writers get consecutive sequence numbers. Write order — entry, link, head — means a crash leaves
 * at worst an unlinked entry file (ignored, replaced on retry), never a link to nothing.
 */

/** Sequence numbers in keys: zero-padded so that keys sort like numbers. */
const SEQ_DIGITS = 10;
const pad = (seq: number): string => String(seq).padStart(SEQ_DIGITS, '0');

/** `owner/name` lower-cased and checked: the chain's name and key path. @throws AppError `RECORD_KEY_INVALID`. */
export function chainName(repository: string): string {
  const name = repository.toLowerCase();
  if (!/^[a-z0-9._-]+\/[a-z0-9._-]+$/.test(name) || name.split('/').some((s) => s === '.' || s === '..')) {
    throw new AppError('RECORD_KEY_INVALID', `not a repository (owner/name): ${JSON.stringify(repository)}`);
  }
  return name;
}

export const linkKey = (repo: string, seq: number): string => `chains/${repo}/${pad(seq)}.json`;
const headKey = (repo: string): string => `chains/${repo}/head.json`;
/** Folder of a job's entries and files. */
export const jobFolder = (jobId: string): string => `jobs/${jobId}/`;

/** What to append: the kind, the job it belongs to (or null), the body and a de-duplication id. */
export interface NewEntry {
  kind: EntryKind;
  jobId: string | null;
  /** The entry's body (validated by the caller against its schema); `body.id` or `body.runId` de-duplicates. */
  body: Record<string, unknown>;
  at?: Date;
}

async function getJson(store: RecordStore, key: string): Promise<unknown> {
  const bytes = await store.get(key);
  if (bytes === null) return null;
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return { invalid: true };
  }
}

/** The current last link of a chain (following links written after a stale head), or null for none. */
async function readHead(store: RecordStore, repo: string): Promise<{ seq: number; hash: string } | null> {
  const raw = (await getJson(store, headKey(repo))) as { seq?: unknown; hash?: unknown } | null;
  let head =
    raw && typeof raw.seq === 'number' && typeof raw.hash === 'string'
      ? { seq: raw.seq, hash: raw.hash }
      : null;
  // A writer that died between link and head: the link is the truth.
  for (;;) {
    const next = chainLinkSchema.safeParse(await getJson(store, linkKey(repo, head ? head.seq + 1 : 0)));
    if (!next.success) return head;
    head = { seq: next.data.seq, hash: next.data.hash };
  }
}

const dedupeId = (body: Record<string, unknown>): string | null =>
  typeof body.runId === 'string' ? body.runId : typeof body.id === 'string' ? body.id : null;

/**
 * Append an entry to `repository`'s chain under its lock. Idempotent per job: an entry of the same
 * job with the same `runId`/`id` already in the chain is returned instead of a second one.
 *
 * @returns the stored entry.
 * @throws AppError `RECORD_STORE_UNAVAILABLE` / `RECORD_LOCK_TIMEOUT` (retryable: nothing was linked).
 */
export async function appendEntry(
  store: RecordStore,
  lock: ChainLock,
  repository: string,
  entry: NewEntry,
): Promise<ChainEntry> {
  const repo = chainName(repository);
  return lock.withLock(repo, async () => {
    const id = dedupeId(entry.body);
    if (entry.jobId !== null && id !== null) {
      const existing = (await readJobEntries(store, entry.jobId)).find((e) => dedupeId(e.entry.body) === id);
      if (existing?.linked) return existing.entry;
    }
    const head = await readHead(store, repo);
    const seq = head ? head.seq + 1 : 0;
    const unsigned = {
      v: 1 as const,
      repo,
      seq,
      prevHash: head?.hash ?? null,
      at: (entry.at ?? new Date()).toISOString(),
      kind: entry.kind,
      jobId: entry.jobId,
      body: entry.body,
    };
    const stored: ChainEntry = { ...unsigned, hash: entryHash(unsigned) };
    const key =
      entry.jobId !== null
        ? `${jobFolder(entry.jobId)}${pad(seq)}-${entry.kind}.json`
        : `repos/${repo}/${pad(seq)}-${entry.kind}.json`;
    const link: ChainLink = { seq, key, kind: entry.kind, jobId: entry.jobId, hash: stored.hash };
    await store.put(key, `${JSON.stringify(stored, null, 2)}\n`);
    await store.put(linkKey(repo, seq), `${JSON.stringify(link)}\n`);
    await store.put(headKey(repo), `${JSON.stringify({ seq, hash: stored.hash })}\n`);
    return stored;
  });
}

/** An entry file of a job and whether the chain links to it (an unlinked one is a crashed append's leftover). */
export interface JobEntry {
  key: string;
  entry: ChainEntry;
  linked: boolean;
}

/** The chained entries in a job's folder, in chain order. Unreadable files are skipped. */
export async function readJobEntries(store: RecordStore, jobId: string): Promise<JobEntry[]> {
  const keys = (await store.list(jobFolder(jobId))).filter((k) => /\/\d{10}-[a-z]+\.json$/.test(k));
  const out: JobEntry[] = [];
  for (const key of keys) {
    const parsed = chainEntrySchema.safeParse(await getJson(store, key));
    if (!parsed.success) continue;
    const link = chainLinkSchema.safeParse(await getJson(store, linkKey(parsed.data.repo, parsed.data.seq)));
    out.push({
      key,
      entry: parsed.data,
      linked: link.success && link.data.key === key && link.data.hash === parsed.data.hash,
    });
  }
  return out.sort((a, b) => a.entry.seq - b.entry.seq);
}

/** The repositories that have a chain (`owner/name`, lower case), ascending. */
export async function listChains(store: RecordStore): Promise<string[]> {
  const keys = await store.list('chains/');
  const names = new Set<string>();
  for (const k of keys) {
    const m = /^chains\/([^/]+\/[^/]+)\/head\.json$/.exec(k);
    if (m?.[1]) names.add(m[1]);
  }
  return [...names].sort();
}

/** One problem found by {@link verifyChain}: the first entry that breaks the chain. */
export interface ChainBreak {
  seq: number;
  jobId: string | null;
  key: string | null;
  problem: string;
}

/** The result of verifying one repository's chain. */
export interface ChainReport {
  repo: string;
  /** Entries checked (from the chain's start, or from `since`). */
  checked: number;
  /** The first break, or null when the chain holds. */
  broken: ChainBreak | null;
  /** Retention sweeps found in the chain (seq, when, how many entries they removed). */
  sweeps: Array<{ seq: number; at: string; removed: number; cutoff: string; reason: string }>;
  /** Where the chain currently starts (after sweeps). */
  start: number;
  /** The last sequence number, or -1 for an empty chain. */
  last: number;
}

/**
 * Verify a repository's chain: every link and entry readable and well-formed, each entry's hash
 * recomputed and equal to its link's, `prevHash` equal to the previous entry's hash, no sequence
 * number missing from the start stated by the latest retention sweep up to the head. Reports the
 * first entry that breaks it: edited (hash differs), removed (missing), reordered or replaced
 * (`prevHash` does not follow).
 *
 * @param options.since report only breaks in entries at or after this time (the whole chain is
 *   still read: a break is where the hashes stop following, wherever it is).
 */
export async function verifyChain(
  store: RecordStore,
  repository: string,
  options: { since?: Date } = {},
): Promise<ChainReport> {
  const repo = chainName(repository);
  const linkKeys = (await store.list(`chains/${repo}/`)).filter((k) => /\/\d{10}\.json$/.test(k));
  const seqs = linkKeys.map((k) => Number(/(\d{10})\.json$/.exec(k)?.[1]));
  const report: ChainReport = { repo, checked: 0, broken: null, sweeps: [], start: 0, last: -1 };
  const entries = new Map<
    number,
    { link: ChainLink | null; entry: ChainEntry | null; problem: string | null }
  >();
  for (const seq of seqs) {
    const rawLink = await getJson(store, linkKey(repo, seq));
    const link = chainLinkSchema.safeParse(rawLink);
    if (!link.success || link.data.seq !== seq) {
      entries.set(seq, {
        link: null,
        entry: null,
        problem: `its chain link ${linkKey(repo, seq)} is not a valid link (edited)`,
      });
      continue;
    }
    const raw = await getJson(store, link.data.key);
    if (raw === null) {
      entries.set(seq, {
        link: link.data,
        entry: null,
        problem: `its ${link.data.kind} file ${link.data.key} is missing (removed)`,
      });
      continue;
    }
    const entry = chainEntrySchema.safeParse(raw);
    if (!entry.success) {
      entries.set(seq, {
        link: link.data,
        entry: null,
        problem: `its ${link.data.kind} file ${link.data.key} is not a valid entry (edited)`,
      });
      continue;
    }
    const e = entry.data;
    const recomputed = entryHash(e);
    let problem: string | null = null;
    if (recomputed !== e.hash || e.hash !== link.data.hash)
      problem = `its ${e.kind} file ${link.data.key} was changed after it was written (hash ${recomputed.slice(0, 12)}…, chained ${link.data.hash.slice(0, 12)}…)`;
    else if (e.seq !== seq || e.repo !== repo)
      problem = `its file ${link.data.key} belongs to ${e.repo} #${e.seq} (moved)`;
    entries.set(seq, { link: link.data, entry: e, problem });
    if (e.kind === 'sweep' && !problem) {
      const body = sweepSchema.safeParse(e.body);
      if (body.success)
        report.sweeps.push({
          seq,
          at: e.at,
          removed: body.data.removed.length,
          cutoff: body.data.cutoff,
          reason: body.data.reason,
        });
    }
  }
  // The latest sweep says where the chain starts now.
  let start = { seq: 0, prevHash: null as string | null };
  const latestSweep = [...entries.entries()].filter(([, i]) => i.link?.kind === 'sweep').pop();
  if (latestSweep) {
    const [seq, item] = latestSweep;
    const body = sweepSchema.safeParse(item.entry?.body);
    if (item.problem || !body.success) {
      report.broken = {
        seq,
        jobId: null,
        key: item.link?.key ?? null,
        problem: `entry ${seq} (retention sweep): ${item.problem ?? 'not a valid sweep entry'}`,
      };
      return report;
    }
    start = body.data.chainStart;
  }
  report.start = start.seq;
  const head = (await getJson(store, headKey(repo))) as { seq?: unknown; hash?: unknown } | null;
  const maxSeq = Math.max(-1, ...seqs, typeof head?.seq === 'number' ? head.seq : -1);
  report.last = maxSeq;
  const since = options.since?.getTime();
  const fail = (b: ChainBreak): ChainReport => {
    report.broken = b;
    return report;
  };
  let prevHash = start.prevHash;
  for (let seq = start.seq; seq <= maxSeq; seq++) {
    const item = entries.get(seq);
    const inScope = (at: string | undefined): boolean =>
      since === undefined || at === undefined || Date.parse(at) >= since;
    if (!item) {
      const next = [...entries.entries()].find(([s]) => s > seq)?.[1];
      if (!inScope(next?.entry?.at)) continue;
      return fail({
        seq,
        jobId: null,
        key: linkKey(repo, seq),
        problem: `entry ${seq} is missing from the chain (its link was removed)${next?.link ? `; entry ${next.link.seq} (job ${next.link.jobId ?? 'none'}) no longer follows` : ''}`,
      });
    }
    const { link, entry, problem } = item;
    if (problem || !entry) {
      if (entry && !inScope(entry.at)) {
        prevHash = link?.hash ?? prevHash;
        continue;
      }
      return fail({
        seq,
        jobId: link?.jobId ?? null,
        key: link?.key ?? null,
        problem: `entry ${seq}: ${problem ?? 'unreadable'}`,
      });
    }
    if (entry.prevHash !== prevHash && inScope(entry.at)) {
      return fail({
        seq,
        jobId: entry.jobId,
        key: link?.key ?? null,
        problem: `entry ${seq} does not follow entry ${seq - 1}: its prevHash differs (an entry before it was replaced, reordered or removed)`,
      });
    }
    prevHash = entry.hash;
    if (inScope(entry.at)) report.checked++;
  }
  if (
    maxSeq >= start.seq &&
    (typeof head?.seq !== 'number' || head.seq !== maxSeq || head.hash !== prevHash)
  ) {
    return fail({
      seq: maxSeq,
      jobId: null,
      key: headKey(repo),
      problem: `the chain head does not match the last entry ${maxSeq} (entries after it were removed, or the head was edited)`,
    });
  }
  return report;
}

/** What {@link sweepChain} did. */
export interface SweepResult {
  repo: string;
  /** The sweep entry, or null when nothing was old enough. */
  entry: ChainEntry | null;
  removedEntries: number;
  removedJobs: string[];
}

/**
 * Retention sweep of one chain: the entries older than `cutoff` at the start of the chain (the
 * chain is in time order; the first newer entry ends the sweep, so a chain only ever loses a
 * prefix) are listed in a new chained `sweep` entry — seq, kind, job, time and hash of each, the
 * reason, and where the chain starts now — then deleted with their links, and with them the
 * folders of jobs none of whose entries is kept (trajectories, logs). `verifyChain` then still
 * passes and lists the sweep. Earlier sweep entries can be swept too: the latest one states the start.
 *
 * @throws AppError `RECORD_STORE_UNAVAILABLE` / `RECORD_LOCK_TIMEOUT`; a sweep interrupted after
 *   its entry was written leaves files that the next sweep removes.
 */
export async function sweepChain(
  store: RecordStore,
  lock: ChainLock,
  repository: string,
  options: { cutoff: Date; retentionDays: number; reason: string; now?: Date },
): Promise<SweepResult> {
  const repo = chainName(repository);
  const cutoffMs = options.cutoff.getTime();
  const plan = await lock.withLock(repo, async () => {
    const report = await verifyChain(store, repo);
    const removed: Array<{
      seq: number;
      kind: string;
      jobId: string | null;
      at: string;
      hash: string;
      key: string;
    }> = [];
    let next: { seq: number; prevHash: string | null } = { seq: report.start, prevHash: null };
    for (let seq = report.start; seq <= report.last; seq++) {
      const link = chainLinkSchema.safeParse(await getJson(store, linkKey(repo, seq)));
      if (!link.success) break;
      const entry = chainEntrySchema.safeParse(await getJson(store, link.data.key));
      if (!entry.success || Date.parse(entry.data.at) >= cutoffMs) break;
      removed.push({
        seq,
        kind: entry.data.kind,
        jobId: entry.data.jobId,
        at: entry.data.at,
        hash: entry.data.hash,
        key: link.data.key,
      });
      next = { seq: seq + 1, prevHash: entry.data.hash };
    }
    return { removed, next, last: report.last };
  });
  if (plan.removed.length === 0) return { repo, entry: null, removedEntries: 0, removedJobs: [] };
  const removedJobs = [...new Set(plan.removed.map((r) => r.jobId).filter((j): j is string => j !== null))];
  // Keep the folder of a job that still has a newer entry (an approval after the cutoff).
  const jobsGone: string[] = [];
  for (const jobId of removedJobs) {
    const kept = (await readJobEntries(store, jobId)).some(
      (e) => e.linked && !plan.removed.some((r) => r.seq === e.entry.seq),
    );
    if (!kept) jobsGone.push(jobId);
  }
  const now = options.now ?? new Date();
  // The sweep entry itself is appended after the last entry, so the chain start is the first kept one
  // (or the sweep entry itself when everything was removed).
  const entry = await appendEntry(store, lock, repo, {
    kind: 'sweep',
    jobId: null,
    at: now,
    body: {
      schema: 'frognano.retention-sweep/1',
      id: `sweep-${now.toISOString()}`,
      retentionDays: options.retentionDays,
      cutoff: options.cutoff.toISOString(),
      reason: options.reason,
      removed: plan.removed.map(({ key: _key, ...r }) => r),
      jobs: jobsGone,
      chainStart: plan.next,
    },
  });
  for (const r of plan.removed) {
    await store.delete(r.key);
    await store.delete(linkKey(repo, r.seq));
  }
  for (const jobId of jobsGone) for (const key of await store.list(jobFolder(jobId))) await store.delete(key);
  return { repo, entry, removedEntries: plan.removed.length, removedJobs: jobsGone };
}
