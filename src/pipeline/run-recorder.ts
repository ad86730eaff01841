import { readdir, readFile, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../observability/logger.js';
import { jobFolder } from '../observability/record-chain.js';
import type { RecordWriter } from '../observability/record-writer.js';
import { policyDigest, runRecordSchema, sha256, type RunRecord } from '../observability/run-record.js';
import { describeServedModel, safeModelUrl, type ServedModel } from '../observability/served-model.js';
import { PROTOCOL_TEXT } from '../protocol/protocol.js';
import { runGit } from '../git/run-git.js';
import type { JobRequest } from './job-request.js';
import type { GitHubClient } from './github-client.js';
import type { Outcome } from './outcome.js';
import type { PublishPullRequest } from './publish-change.js';
import type { RecordNote } from './record-note.js';
import type { TestRun } from './run-tests.js';
import type { JobPolicy } from './run-job.js';
import type { VerifiedPatch } from './verify-patch.js';

/**
 * Facts a job reports while it runs, for its run record (`RunJobDeps.onFacts`). Each call gives
 * some of them; later calls add to or replace earlier ones.
 */
export interface RunFacts {
  policy: JobPolicy;
  baseSha: string;
  /** The user message the agent got (the issue quoted as data). */
  instruction: string;
  /** The chosen patch and what verifying it found; `dir` is the clone (alive until the job ends). */
  verified: VerifiedPatch;
  patch: string;
  dir: string;
}

/** The collector of one job run; {@link RunCollector.finish} writes the record. */
export interface RunCollector {
  onFacts(facts: Partial<RunFacts>): void;
  /** `publishPullRequest` that also notes the pull request, its check run and the pushed commit. */
  wrapPublish(publish: PublishPullRequest): PublishPullRequest;
  /** Build and write the record (store, or spool when it is down). Never throws. */
  finish(outcome: Outcome): Promise<RecordNote>;
}

/** Options of {@link createRunRecorder}. */
export interface RunRecorderOptions {
  writer: RecordWriter;
  /** TRAJECTORY_DIR: the job's local files (`<dir>/<job id>/…`) are uploaded with the record. */
  trajectoryDir: string;
  model: { name: string; url: string; apiKey: string | null };
  logger: Logger;
  now?: () => Date;
}

const VERSION: string = await readFile(new URL('../../package.json', import.meta.url), 'utf8')
  .then((t) => String((JSON.parse(t) as { version?: unknown }).version ?? 'unknown'))
  .catch(() => 'unknown');

/**
 * The run recorder of a worker: per job, {@link RunRecorder.begin} asks at once (in parallel with
 * the job) for the sender's permission and what the model server serves, collects the facts the
 * pipeline reports, and at the end writes one `record` entry with the job's files (trajectories,
 * test logs, the patch) to the record store.
 */
export interface RunRecorder {
  begin(data: JobRequest, jobId: string, octokit: GitHubClient): RunCollector;
}

export function createRunRecorder(options: RunRecorderOptions): RunRecorder {
  const now = options.now ?? (() => new Date());
  return { begin: (data, jobId, octokit) => beginRun({ ...options, now }, data, jobId, octokit) };
}

/** The pull request a job published, as its record notes it. */
interface Published {
  number: number;
  url: string;
  checkRunId: number;
  headSha: string;
  commitDiffSha256: string | null;
}

/** What a run's collector keeps until {@link finishRun} writes it. */
interface RunState {
  data: JobRequest;
  jobId: string;
  startedAt: Date;
  facts: Partial<RunFacts>;
  published: Published | null;
  /** Asked at the start, in parallel with the job. */
  permission: Promise<RunRecord['trigger']['permission']>;
  served: Promise<ServedModel>;
}

type Options = RunRecorderOptions & { now: () => Date };

/** One job's collector: starts the permission and served-model look-ups at once. */
function beginRun(options: Options, data: JobRequest, jobId: string, octokit: GitHubClient): RunCollector {
  const state: RunState = {
    data,
    jobId,
    startedAt: options.now(),
    facts: {},
    published: null,
    permission: lookUpPermission(octokit, data).catch((err: unknown) => {
      options.logger.warn(
        { err: { message: (err as Error).message } },
        'run record: permission lookup failed',
      );
      return null;
    }),
    served: describeServedModel({
      modelUrl: options.model.url,
      modelName: options.model.name,
      apiKey: options.model.apiKey,
    }),
  };
  return {
    onFacts(f) {
      Object.assign(state.facts, f);
    },
    wrapPublish: (publish) => async (client, request, logger) => {
      const pr = await publish(client, request, logger);
      const { dir, baseSha } = state.facts;
      const commitDiffSha256 =
        dir && baseSha ? await commitDiffHash(dir, baseSha, request.headSha).catch(() => null) : null;
      state.published = {
        number: pr.number,
        url: pr.url,
        checkRunId: pr.checkRunId,
        headSha: request.headSha,
        commitDiffSha256,
      };
      return pr;
    },
    finish: (outcome) => finishRun(options, state, outcome),
  };
}

/** A file that goes with the record without being in the job's folder (the patch). */
interface ExtraFile {
  name: string;
  key: string;
  data: string;
}

/** Build the record and write it (store, or spool). Never throws: a bug here must not cost the job its outcome. */
async function finishRun(options: Options, state: RunState, outcome: Outcome): Promise<RecordNote> {
  const { jobId, facts } = state;
  try {
    const files = await localFiles(join(options.trajectoryDir, jobId), jobId);
    const extra: ExtraFile[] = facts.patch
      ? [{ name: 'patch.diff', key: `${jobFolder(jobId)}files/patch.diff`, data: facts.patch }]
      : [];
    const body = await buildRecord(options, state, outcome, files, extra);
    const written = await options.writer.write({
      repository: body.repository,
      kind: 'record',
      jobId,
      body,
      at: options.now(),
      files: [
        ...files.map((f) => ({ key: f.key, path: f.path })),
        ...extra.map((f) => ({ key: f.key, data: f.data })),
      ],
    });
    return { state: written, jobId };
  } catch (err) {
    options.logger.error({ err }, 'could not build the run record');
    return { state: 'pending', jobId };
  }
}

/**
 * The run record of a finished job.
 *
 * @throws ZodError when the record does not match `runRecordSchema` (a bug).
 */
async function buildRecord(
  options: Options,
  state: RunState,
  outcome: Outcome,
  files: LocalFile[],
  extra: ExtraFile[],
): Promise<RunRecord> {
  const { data, jobId, facts, published, startedAt } = state;
  return runRecordSchema.parse({
    schema: 'frognano.run-record/1',
    runId: `${jobId}@${startedAt.toISOString()}`,
    jobId,
    repository: `${data.owner}/${data.repo}`,
    issueNumber: data.issueNumber,
    trigger: {
      login: data.triggeredBy.login,
      userId: data.triggeredBy.id ?? null,
      deliveryId: data.deliveryId,
      label: data.label,
      enqueuedAt: data.enqueuedAt,
      permission: await state.permission,
    },
    startedAt: startedAt.toISOString(),
    finishedAt: options.now().toISOString(),
    worker: { hostname: hostname(), version: VERSION },
    policy: facts.policy ? describePolicy(facts.policy) : null,
    model: { name: options.model.name, url: safeModelUrl(options.model.url), ...(await state.served) },
    protocol: { file: 'src/protocol/protocol.json', sha256: sha256(PROTOCOL_TEXT) },
    instruction: facts.instruction
      ? { sha256: sha256(facts.instruction), chars: facts.instruction.length }
      : null,
    files: [
      ...files.map((f) => ({ name: f.name, key: f.key, sha256: f.sha256, bytes: f.bytes })),
      ...extra.map((f) => ({
        name: f.name,
        key: f.key,
        sha256: sha256(f.data),
        bytes: Buffer.byteLength(f.data),
      })),
    ],
    change: describeChange(facts, published, outcome),
    tests: describeTests(facts.verified, jobId, files),
    outcome: describeOutcome(outcome),
    pullRequest: published
      ? { number: published.number, url: published.url, checkRunId: published.checkRunId }
      : pullOf(outcome),
  });
}

async function lookUpPermission(
  octokit: GitHubClient,
  data: JobRequest,
): Promise<RunRecord['trigger']['permission']> {
  const { data: perm } = await octokit.rest.repos.getCollaboratorPermissionLevel({
    owner: data.owner,
    repo: data.repo,
    username: data.triggeredBy.login,
  });
  return {
    permission: perm.permission,
    roleName: (perm as { role_name?: string }).role_name ?? null,
    checkedAt: new Date().toISOString(),
  };
}

/** A file of the job's local trajectory folder: store key, sha256, size in bytes. */
interface LocalFile {
  name: string;
  path: string;
  key: string;
  sha256: string;
  bytes: number;
}

/** The job's files in its local trajectory folder, with their store keys and hashes. */
async function localFiles(dir: string, jobId: string): Promise<LocalFile[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: LocalFile[] = [];
  for (const name of names.sort()) {
    if (!/^[A-Za-z0-9._-]+$/.test(name) || name.endsWith('.tmp')) continue;
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (!info?.isFile()) continue;
    const bytes = await readFile(path);
    out.push({
      name,
      path,
      key: `${jobFolder(jobId)}files/${name}`,
      sha256: sha256(bytes),
      bytes: bytes.length,
    });
  }
  return out;
}

/** sha256 of `git diff --binary --full-index <base> <head>` in the clone: anyone can recompute it. */
async function commitDiffHash(dir: string, base: string, head: string): Promise<string> {
  const res = await runGit(['diff', '--binary', '--full-index', base, head], { cwd: dir });
  return sha256(res.stdout);
}

export const COMMIT_DIFF_COMMAND = 'git diff --binary --full-index <baseSha> <sha>';

function describePolicy(policy: JobPolicy): NonNullable<RunRecord['policy']> {
  const effective = JSON.parse(JSON.stringify(policy)) as Record<string, unknown>;
  const { clamps = [], ...rest } = effective as { clamps?: unknown[] } & Record<string, unknown>;
  return { sha256: policyDigest(rest), effective: rest, clamps };
}

function describeChange(
  facts: Partial<RunFacts>,
  published: { headSha: string; commitDiffSha256: string | null } | null,
  outcome: Outcome,
): RunRecord['change'] {
  const patch = facts.patch ?? (outcome.kind === 'tests_failing' ? outcome.patch : undefined);
  if (!patch) return null;
  return {
    patchSha256: sha256(patch),
    patchBytes: Buffer.byteLength(patch),
    diffstat: facts.verified?.diffstat ?? ('summary' in outcome ? (outcome.summary?.diffstat ?? '') : ''),
    baseSha: facts.baseSha ?? null,
    commit:
      published && published.commitDiffSha256
        ? { sha: published.headSha, diffSha256: published.commitDiffSha256, diffCommand: COMMIT_DIFF_COMMAND }
        : null,
  };
}

function describeTests(
  v: VerifiedPatch | undefined,
  jobId: string,
  files: Array<{ name: string; key: string }>,
): RunRecord['tests'] {
  if (!v) return null;
  const side = (run: TestRun | null, log: string) =>
    run
      ? {
          command: run.command,
          source: run.source,
          exitCode: run.exitCode,
          passed: run.passed,
          timedOut: run.timedOut,
          durationMs: run.durationMs,
          tests: run.tests ? run.tests.map((t) => ({ ...t })) : null,
          logKey: files.find((f) => f.name === `${log}.log`)?.key ?? null,
        }
      : null;
  void jobId;
  return {
    base: side(v.baseTests, 'tests-base'),
    head: side(v.tests, 'tests-head'),
    comparison: v.comparison ? (JSON.parse(JSON.stringify(v.comparison)) as Record<string, unknown>) : null,
    verdict: null,
  };
}

/** The outcome without the bulky or model-written parts (summary, patch): kind, a headline, the facts. */
function describeOutcome(outcome: Outcome): RunRecord['outcome'] {
  const { summary: _s, patch: _p, ...detail } = outcome as Outcome & { summary?: unknown; patch?: unknown };
  const headline: Record<string, string> = {
    pr_opened: 'opened a draft pull request',
    no_change: 'the model made no change',
    tests_failing: 'the tests fail with the change',
    llm_unreachable: 'the model server could not be reached',
    sandbox_failed: 'the sandbox failed',
    timed_out: 'timed out',
    cancelled: 'cancelled',
    refused: 'refused',
    github_error: 'GitHub failed',
    failed: 'failed',
  };
  return {
    kind: outcome.kind,
    headline: headline[outcome.kind] ?? outcome.kind,
    detail: JSON.parse(JSON.stringify(detail)) as Record<string, unknown>,
  };
}

function pullOf(outcome: Outcome): RunRecord['pullRequest'] {
  if (
    'pullNumber' in outcome &&
    typeof outcome.pullNumber === 'number' &&
    typeof outcome.pullUrl === 'string'
  )
    return { number: outcome.pullNumber, url: outcome.pullUrl, checkRunId: null };
  return null;
}
