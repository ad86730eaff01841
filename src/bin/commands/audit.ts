import { parseArgs } from 'node:util';
import { AppError } from '../../app-error.js';
import { loadRecordEnv, type RecordStoreEnv } from '../../config/env.js';
import { createRedisChainLock, type ChainLock } from '../../observability/chain-lock.js';
import {
  listChains,
  readJobEntries,
  verifyChain,
  type ChainReport,
  type JobEntry,
} from '../../observability/record-chain.js';
import { sweepRecords } from '../../observability/record-retention.js';
import { createRecordStore } from '../../observability/record-store-config.js';
import type { RecordStore } from '../../observability/record-store.js';
import {
  approvalSchema,
  runRecordSchema,
  type Approval,
  type RunRecord,
} from '../../observability/run-record.js';

const USAGE = `usage: frognano-bot audit <verify | show | sweep> [options]

  audit verify [--repo owner/name] [--since DATE] [--json]
      Check the hash chain of every repository (or one): each entry unchanged, none missing,
      in order. Names the first entry that breaks a chain; lists retention sweeps. Exit 1 if any
      chain is broken.
  audit show <job id> [--json]
      Print a job's run record: who asked and with what permission, when, model, policy, outcome,
      tests, change, approvals.
  audit sweep [--retention-days N] [--repo owner/name]
      Remove entries older than the retention (RECORD_RETENTION_DAYS) and chain a sweep entry
      saying what and why. Takes the chain lock in Redis (REDIS_URL, QUEUE_PREFIX) like the workers.

The store is the one the workers use: RECORD_STORE (volume: RECORD_DIR; s3: RECORD_S3_*), or
--dir DIR for a volume store folder.`;

/** `frognano-bot audit`: verify, show or sweep the run record store. */
export async function main(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        repo: { type: 'string' },
        since: { type: 'string' },
        json: { type: 'boolean', default: false },
        dir: { type: 'string' },
        'retention-days': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (!sub || sub === '--help' || sub === '-h' || parsed.values.help) {
    // Asked for, usage is the output; missing a subcommand, it is a usage error (stderr, exit 2).
    if (sub) process.stdout.write(`${USAGE}\n`);
    else process.stderr.write(`frognano-bot audit: which subcommand?\n\n${USAGE}\n`);
    return sub ? 0 : 2;
  }
  const env = loadRecordEnv();
  const storeEnv: RecordStoreEnv = parsed.values.dir
    ? { ...env, driver: 'volume', dir: parsed.values.dir }
    : env;
  const store = createRecordStore(storeEnv);
  try {
    switch (sub) {
      case 'verify': {
        let since: Date | undefined;
        if (parsed.values.since !== undefined) {
          since = new Date(parsed.values.since);
          if (Number.isNaN(since.getTime())) {
            process.stderr.write(`frognano-bot audit: --since: not a date: ${parsed.values.since}\n`);
            return 2;
          }
        }
        return await verify(store, parsed.values.repo, since, parsed.values.json);
      }
      case 'show': {
        const [jobId] = parsed.positionals;
        if (!jobId) {
          process.stderr.write(`${USAGE}\n`);
          return 2;
        }
        return await show(store, jobId, parsed.values.json);
      }
      case 'sweep': {
        const days =
          parsed.values['retention-days'] === undefined
            ? env.retentionDays
            : Number(parsed.values['retention-days']);
        if (!Number.isFinite(days) || days <= 0) {
          process.stderr.write('frognano-bot audit: --retention-days must be a positive number\n');
          return 2;
        }
        return await sweep(store, days, parsed.values.repo);
      }
      default:
        process.stderr.write(`frognano-bot audit: unknown subcommand "${sub}"\n\n${USAGE}\n`);
        return 2;
    }
  } finally {
    store.close();
  }
}

async function verify(
  store: RecordStore,
  repo: string | undefined,
  since: Date | undefined,
  json: boolean,
): Promise<number> {
  const repos = repo ? [repo] : await listChains(store);
  const reports: ChainReport[] = [];
  for (const r of repos) reports.push(await verifyChain(store, r, { since }));
  if (json) process.stdout.write(`${JSON.stringify({ store: store.location, reports }, null, 2)}\n`);
  else process.stdout.write(renderVerify(store.location, reports));
  return reports.some((r) => r.broken) ? 1 : 0;
}

/** The text of `audit verify`: one block per repository. */
export function renderVerify(location: string, reports: ChainReport[]): string {
  if (reports.length === 0) return `No run records in ${location}.\n`;
  const lines = [`Run record chains in ${location}:`];
  for (const r of reports) {
    const range = r.last < r.start ? 'empty' : `entries ${r.start}–${r.last}`;
    if (r.broken) {
      lines.push(
        `  ✗ ${r.repo}: BROKEN at entry ${r.broken.seq}${r.broken.jobId ? ` (job ${r.broken.jobId})` : ''}: ${r.broken.problem}`,
      );
    } else {
      lines.push(`  ✓ ${r.repo}: intact, ${r.checked} entries checked (${range})`);
    }
    for (const s of r.sweeps) {
      lines.push(
        `      retention sweep, entry ${s.seq} at ${s.at}: removed ${s.removed} entries older than ${s.cutoff} (${s.reason})`,
      );
    }
  }
  const broken = reports.filter((r) => r.broken).length;
  lines.push(broken === 0 ? 'All chains intact.' : `${broken} of ${reports.length} chains broken.`);
  return `${lines.join('\n')}\n`;
}

async function show(store: RecordStore, jobId: string, json: boolean): Promise<number> {
  const entries = await readJobEntries(store, jobId);
  const records = entries.filter((e) => e.entry.kind === 'record');
  if (records.length === 0) {
    throw new AppError(
      'RECORD_NOT_FOUND',
      `no run record for job ${jobId} in ${store.location}` +
        ' (a record written while the store was down is stored when the worker retries; its status comment says "pending")',
    );
  }
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ jobId, store: store.location, entries: entries.map((e) => ({ key: e.key, linked: e.linked, ...e.entry })) }, null, 2)}\n`,
    );
    return 0;
  }
  process.stdout.write(renderShow(entries));
  return 0;
}

const when = (iso: string): string =>
  iso
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC')
    .replace(/Z$/, ' UTC');

/** `audit show` as a person reads it: each run of the job, then the approvals. */
export function renderShow(entries: JobEntry[]): string {
  const out: string[] = [];
  for (const e of entries.filter((x) => x.entry.kind === 'record')) {
    const parsed = runRecordSchema.safeParse(e.entry.body);
    if (!parsed.success) {
      out.push(`Entry ${e.entry.seq}: a record this version cannot read (${String(e.entry.body.schema)})`);
      continue;
    }
    out.push(...renderRecord(parsed.data, e));
  }
  const approvals = entries
    .filter((x) => x.entry.kind === 'approval')
    .map((x) => ({ e: x, a: approvalSchema.safeParse(x.entry.body) }))
    .filter((x): x is { e: JobEntry; a: { success: true; data: Approval } } => x.a.success);
  out.push('', 'Approvals');
  if (approvals.length === 0) out.push('  none yet (the human review check is still waiting)');
  for (const { e, a } of approvals) {
    out.push(
      `  @${a.data.reviewer} (${a.data.roleName ?? a.data.permission}) approved commit ${a.data.commit.slice(0, 12)} of #${a.data.pullNumber}` +
        ` at ${when(a.data.submittedAt ?? e.entry.at)}${a.data.reviewUrl ? ` — ${a.data.reviewUrl}` : ''} [entry ${e.entry.seq}]`,
    );
  }
  const unlinked = entries.filter((x) => !x.linked);
  if (unlinked.length > 0)
    out.push(
      '',
      `Not in the chain (left by an interrupted write; not part of the record): ${unlinked.map((x) => x.key).join(', ')}`,
    );
  out.push('', `Check the chain: frognano-bot audit verify --repo ${entries[0]?.entry.repo ?? 'owner/name'}`);
  return `${out.join('\n')}\n`;
}

function renderRecord(r: RunRecord, e: JobEntry): string[] {
  const row = (label: string, text: string): string => `  ${label.padEnd(13)}${text}`;
  const perm = r.trigger.permission;
  const lines = [
    `Run record of job ${r.jobId} — ${r.repository}${r.issueNumber !== null ? ` issue #${r.issueNumber}` : ''}`,
    row(
      'Asked by',
      `@${r.trigger.login}${r.trigger.label ? `, who added the label \`${r.trigger.label}\`` : ''}` +
        (perm
          ? ` — permission ${perm.roleName ?? perm.permission} (API answer at ${when(perm.checkedAt)})`
          : ' — permission not recorded'),
    ),
    row('Delivery', r.trigger.deliveryId),
    row(
      'When',
      `queued ${r.trigger.enqueuedAt ? when(r.trigger.enqueuedAt) : '?'}, ran ${when(r.startedAt)} → ${when(r.finishedAt)}`,
    ),
    row('Worker', `${r.worker.hostname}, frognano-bot ${r.worker.version}`),
    row('Model', `${r.model.name} at ${r.model.url}`),
  ];
  if (r.model.servedEntry)
    lines.push(row('', `served (GET /v1/models): ${JSON.stringify(r.model.servedEntry)}`));
  if (r.model.modelInfo)
    lines.push(row('', `model info (GET /get_model_info): ${JSON.stringify(r.model.modelInfo)}`));
  for (const n of r.model.notes) lines.push(row('', `note: ${n}`));
  lines.push(row('Protocol', `${r.protocol.file} sha256 ${r.protocol.sha256}`));
  if (r.policy) {
    const p = r.policy.effective;
    const picks = ['maxSteps', 'maxTimeSec', 'candidates', 'testCommand', 'protectedPaths']
      .filter((k) => p[k] !== undefined)
      .map((k) => `${k} ${JSON.stringify(p[k])}`);
    lines.push(row('Policy', `sha256 ${r.policy.sha256}`), row('', picks.join(', ')));
    lines.push(
      row(
        '',
        r.policy.clamps.length
          ? `clamped: ${r.policy.clamps.map((c) => JSON.stringify(c)).join('; ')}`
          : 'no value clamped',
      ),
    );
  } else lines.push(row('Policy', 'not resolved (the job stopped before)'));
  if (r.instruction)
    lines.push(row('Instruction', `sha256 ${r.instruction.sha256} (${r.instruction.chars} characters)`));
  lines.push(
    row(
      'Outcome',
      `${r.outcome.kind} — ${r.outcome.headline}${r.pullRequest ? `: #${r.pullRequest.number} ${r.pullRequest.url}` : ''}`,
    ),
  );
  if (r.change) {
    lines.push(
      row(
        'Change',
        `patch sha256 ${r.change.patchSha256} (${r.change.patchBytes} bytes) on ${r.change.baseSha?.slice(0, 12) ?? '?'}`,
      ),
    );
    if (r.change.commit)
      lines.push(
        row(
          '',
          `commit ${r.change.commit.sha} — sha256 of \`${r.change.commit.diffCommand}\`: ${r.change.commit.diffSha256}`,
        ),
      );
    for (const l of r.change.diffstat.split('\n').filter(Boolean)) lines.push(row('', l));
  }
  if (r.tests) {
    const side = (name: string, t: NonNullable<RunRecord['tests']>['head']): string =>
      t
        ? `${name}: \`${t.command}\` ${t.passed ? 'passed' : t.timedOut ? 'timed out' : `failed (exit ${t.exitCode})`}`
        : `${name}: did not run`;
    lines.push(row('Tests', `${side('base', r.tests.base)}; ${side('head', r.tests.head)}`));
    const c = r.tests.comparison as { fixed?: string[]; broken?: string[]; stillFailing?: string[] } | null;
    if (c) {
      const list = (xs: string[] | undefined): string => (xs && xs.length ? xs.join(', ') : 'none');
      lines.push(
        row('', `fixed: ${list(c.fixed)}; broken: ${list(c.broken)}; still failing: ${list(c.stillFailing)}`),
      );
    }
  }
  lines.push(row('Files', r.files.length ? '' : 'none'));
  for (const f of r.files)
    lines.push(row('', `${f.name} (${f.bytes} bytes, sha256 ${f.sha256.slice(0, 16)}…)`));
  lines.push(
    row(
      'Chain',
      `entry ${e.entry.seq} of ${e.entry.repo}, hash ${e.entry.hash.slice(0, 16)}…${e.linked ? '' : ' (NOT LINKED)'}`,
    ),
  );
  return lines;
}

async function sweep(store: RecordStore, retentionDays: number, repo: string | undefined): Promise<number> {
  // The workers' lock: a sweep must not interleave with a worker appending to the same chain.
  const { createRedisConnection, closeRedis } = await import('../../queue/redis-connection.js');
  const { createSilentLogger } = await import('../../observability/logger.js');
  // `worker` role: commands wait for the connection instead of failing before it is up.
  const redis = createRedisConnection(process.env.REDIS_URL || 'redis://127.0.0.1:6379', 'worker', {
    logger: createSilentLogger(),
    name: 'frognano-audit',
  });
  const lock: ChainLock = createRedisChainLock({ redis, prefix: process.env.QUEUE_PREFIX || 'frognano' });
  const close = (): Promise<void> => closeRedis(redis);
  try {
    const { swept, failed } = await sweepRecords({ store, lock, retentionDays, repo });
    if (swept.length === 0 && failed.length === 0)
      process.stdout.write(`Nothing older than ${retentionDays} days in ${store.location}.\n`);
    for (const r of swept) {
      process.stdout.write(
        `${r.repo}: removed ${r.removedEntries} entries and ${r.removedJobs.length} job folders; sweep entry ${r.entry?.seq}\n`,
      );
    }
    for (const f of failed) process.stderr.write(`frognano-bot audit sweep: ${f.repo}: ${f.error}\n`);
    if (failed.length > 0) return 1;
    return 0;
  } finally {
    await close();
  }
}
