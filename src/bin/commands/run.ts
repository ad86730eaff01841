import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { BUILT_IN_DEFAULTS } from '../../config/policy.js';
import type { TrajectoryStep } from '../../leaf/trajectory.js';
import { listModels } from '../../llm/sglang-client.js';
import { createChatModelFromUrl } from '../../leaf/replay-model.js';
import { createLogger, type Logger } from '../../observability/logger.js';
import { createJobContext, type JobPolicy } from '../../pipeline/job-context.js';
import { createProbedSandboxFactory } from '../../pipeline/probed-sandbox-factory.js';
import { createFolderPublisher, type FolderSummary } from '../../pipeline/publishers/folder-publisher.js';
import { runPipeline } from '../../pipeline/run-pipeline.js';
import { createLocalSource } from '../../pipeline/sources/local-source.js';
import type { EgressTarget } from '../../sandbox/egress-probe.js';
import { createLocalSandboxFactory } from '../../sandbox/local/local-sandbox.js';
import type { SandboxFactory } from '../../sandbox/sandbox.js';
import { startLocalRunGuard } from './local-run-guard.js';
import { exitCodeOf, RUN_EXIT_CODES } from './run-exit-code.js';

/** SGLang's default port (https://docs.sglang.ai/advanced_features/server_arguments.html). */
export const DEFAULT_MODEL_URL = 'http://127.0.0.1:30000/v1';
export const DEFAULT_MODEL = 'microsoft/FrogNano-4B-2609';
export const SGLANG_LAUNCH_HINT =
  'python -m sglang.launch_server --model-path microsoft/FrogNano-4B-2609 --reasoning-parser qwen3 --tool-call-parser qwen3_coder';

const USAGE = `usage: frognano-bot run --repo <path|git URL> --issue <file | - | text> [options]

  --repo PATH|URL     repository to work on (a local folder, a local git repository, or a git URL)
  --issue FILE|-|TEXT the task: a file, - for standard input, or the text itself
  --model-url URL     OpenAI-compatible endpoint of SGLang (default ${DEFAULT_MODEL_URL}),
                      or replay:<trajectory.json> to replay a recorded trajectory instead of a model
  --model NAME        model name sent to the server (default ${DEFAULT_MODEL})
  --api-key KEY       API key for the server (default: env MODEL_API_KEY, else none)
  --max-steps N       step cap (default 150)
  --max-time SEC      wall-clock cap in seconds (default 10800)
  --test-command CMD  command that runs the tests afterwards (default: detected; "none" to skip)
  --out DIR           where to write patch.diff, trajectory.json and summary.json (default ./frognano-run)
  --keep              keep a fresh repository with the patch applied (its path is printed)

Exit code (README, "frognano-bot run"): 0 the patch is ready; 1 no change, out of time or another
failure; 2 usage error; 3 no model server answers; 4 the patch is ready but FLAGGED (it modifies
tests: test tampering); 5 the tests fail with the patch; 6 a check refused the patch; 7 the sandbox
failed or could reach the network (refused); 130 interrupted.`;

/** What a test may put in place of `run`'s own parts (the CLI passes none). */
export interface RunCommandHooks {
  /**
   * The sandbox driver, still wrapped in the egress probe (a test gives one that shares the host's
   * network, to see the run refuse it).
   */
  sandboxFactory?: SandboxFactory;
}

/**
 * `frognano-bot run`: the pipeline's chain (`runPipeline`) on a local repository — the local source,
 * local bubblewrap sandboxes behind the egress probe, the same checks, base/head comparison and
 * outcomes as a labelled issue — with the folder publisher instead of a pull request. The exit code
 * is `exitCodeOf(outcome)`.
 */
export async function main(argv: string[], hooks: RunCommandHooks = {}): Promise<number> {
  const options = parseRunOptions(argv);
  if (typeof options === 'number') return options;
  const issueText = await readIssue(options.issue);
  if (!issueText.trim()) return usageError('the issue text is empty');
  const logger = createLogger({
    level: process.env.LOG_LEVEL ?? 'warn',
    destination: process.stderr as never,
  });
  if (!options.replay && !(await modelServerAnswers(options.modelUrl, options.apiKey))) return 3;
  return runLocally(options, issueText, logger, hooks);
}

/** The command line of `run`, checked. */
interface RunOptions {
  repo: string;
  issue: string;
  modelUrl: string;
  /** `--model-url replay:<trajectory.json>`: no model server, the recorded answers. */
  replay: boolean;
  model: string;
  apiKey: string | undefined;
  maxSteps: number | undefined;
  /** Seconds. */
  maxTimeSec: number | undefined;
  /** `none` = skip the tests; absent = detect. */
  testCommand: string | undefined;
  out: string;
  keep: boolean;
}

/** Print a usage error; returns exit code 2. */
function usageError(msg: string): number {
  process.stderr.write(`frognano-bot run: ${msg}\n\n${USAGE}\n`);
  return 2;
}

/** Parse and check `argv`; an exit code when the command ends here (usage error 2, `--help` 0). */
function parseRunOptions(argv: string[]): RunOptions | number {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        repo: { type: 'string' },
        issue: { type: 'string' },
        'model-url': { type: 'string', default: DEFAULT_MODEL_URL },
        model: { type: 'string', default: DEFAULT_MODEL },
        'api-key': { type: 'string' },
        'max-steps': { type: 'string' },
        'max-time': { type: 'string' },
        'test-command': { type: 'string' },
        out: { type: 'string', default: 'frognano-run' },
        keep: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }));
  } catch (err) {
    return usageError((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!values.repo) return usageError('--repo is required');
  if (values.issue === undefined) return usageError('--issue is required');
  const maxSteps = positiveInt(values['max-steps'], '--max-steps');
  const maxTimeSec = positiveInt(values['max-time'], '--max-time');
  if (typeof maxSteps === 'string') return usageError(maxSteps);
  if (typeof maxTimeSec === 'string') return usageError(maxTimeSec);
  const modelUrl = values['model-url'];
  const replay = modelUrl.startsWith('replay:');
  if (!replay && !isHttpUrl(modelUrl)) {
    return usageError(
      `--model-url must be an http:// or https:// URL (e.g. ${DEFAULT_MODEL_URL}) or replay:<trajectory.json> (got "${modelUrl}")`,
    );
  }
  return {
    repo: values.repo,
    issue: values.issue,
    modelUrl,
    replay,
    model: values.model,
    apiKey: values['api-key'] ?? process.env.MODEL_API_KEY,
    maxSteps,
    maxTimeSec,
    testCommand: values['test-command'],
    out: values.out,
    keep: values.keep,
  };
}

/** Whether a model server answers `GET /v1/models` at `modelUrl`; if not, says how to start one. */
async function modelServerAnswers(modelUrl: string, apiKey: string | undefined): Promise<boolean> {
  try {
    await listModels(modelUrl, apiKey);
    return true;
  } catch (err) {
    // The client's message names the URL and how to start SGLang; only the replay option is run's own.
    process.stderr.write(
      `frognano-bot run: ${(err as Error).message}\n` +
        `Or pass --model-url replay:<trajectory.json> to replay a recorded run.\n`,
    );
    return false;
  }
}

/**
 * The pipeline on the local repository, the folder publisher writing `options.out`; prints the
 * summary. SIGINT/SIGTERM cancel the run. Returns `exitCodeOf(outcome)`.
 */
async function runLocally(
  options: RunOptions,
  issueText: string,
  logger: Logger,
  hooks: RunCommandHooks,
): Promise<number> {
  const { modelUrl, replay, testCommand } = options;
  const model = createChatModelFromUrl(modelUrl, { model: options.model, apiKey: options.apiKey, logger });
  const policy: JobPolicy = {
    ...BUILT_IN_DEFAULTS,
    ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
    ...(options.maxTimeSec !== undefined ? { maxTimeSec: options.maxTimeSec } : {}),
    testCommand: testCommand && testCommand !== 'none' ? testCommand : null,
  };
  const outDir = resolve(options.out);
  const guard = await startLocalRunGuard();
  const store = await mkdtemp(join(tmpdir(), 'frognano-run-'));
  try {
    const ctx = createJobContext({
      jobId: `run-${randomUUID().slice(0, 8)}`,
      logger,
      signal: guard.signal,
      workDir: tmpdir(),
      trajectoryDir: store,
      // The probe targets: the canary, the model server, the repository's host.
      sandboxFactory: createProbedSandboxFactory(
        hooks.sandboxFactory ?? createRunSandboxFactory(logger),
        egressTargets(guard.canaryTarget, replay ? null : modelUrl, options.repo),
        logger,
      ),
      createModel: () => model,
      testTimeoutMs: 15 * 60_000,
      keepWorkspace: options.keep,
      skipTests: testCommand === 'none',
      onAgentStep: createProgress(policy.maxSteps),
    });
    const outcome = await runPipeline(
      ctx,
      createLocalSource({ repo: options.repo, issueText, policy }),
      createFolderPublisher({
        outDir,
        exitCodeOf,
        startedAt: new Date(),
        extra: {
          model: replay ? `replay of ${modelUrl.slice('replay:'.length)}` : `${options.model} at ${modelUrl}`,
        },
      }),
    );
    await printSummary(outDir, replay);
    return exitCodeOf(outcome);
  } finally {
    await guard.release();
    await rm(store, { recursive: true, force: true });
  }
}

/** Print the `summary.json` the folder publisher wrote, and where a kept workspace is. */
async function printSummary(outDir: string, replay: boolean): Promise<void> {
  const summary = JSON.parse(await readFile(join(outDir, 'summary.json'), 'utf8')) as FolderSummary;
  process.stdout.write(formatRunSummary(summary, replay));
  if (typeof summary.checkout === 'string')
    process.stdout.write(
      `workspace kept at ${summary.checkout} (a fresh repository: the base commit, the patch applied and staged)\n`,
    );
}

/**
 * The local bubblewrap driver. Limits this host cannot enforce (e.g. a non-root user without
 * delegated cgroups) are a warning for this single-user command; the worker refuses such sandboxes.
 */
function createRunSandboxFactory(logger: Logger): SandboxFactory {
  return createLocalSandboxFactory({
    logger,
    onUnenforced: (message) =>
      process.stderr.write(
        `frognano-bot run: warning: ${message}\n  The sandbox still has no network and no credentials. What each limit needs: README, "Security".\n`,
      ),
  });
}

/** What the sandboxes of `run` must not reach: the loopback canary, the model server, the repository's host. */
function egressTargets(canary: EgressTarget, modelUrl: string | null, repo: string): EgressTarget[] {
  const targets: EgressTarget[] = [canary];
  if (modelUrl) targets.push({ name: 'model-server', url: modelUrl });
  if (/^(https?|ssh):\/\//.test(repo)) {
    const u = new URL(repo);
    targets.push({
      name: 'repository host',
      url: `${u.protocol === 'ssh:' ? 'http:' : u.protocol}//${u.host}`,
    });
  }
  return targets;
}

/** Whether `text` parses as an absolute http: or https: URL (what an OpenAI-compatible server has). */
export function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function positiveInt(value: string | undefined, flag: string): number | undefined | string {
  if (value === undefined) return undefined;
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : `${flag} must be a whole number above 0 (got "${value}")`;
}

async function readIssue(arg: string): Promise<string> {
  if (arg === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  if (existsSync(arg) && statSync(arg).isFile()) return readFile(arg, 'utf8');
  return arg;
}

function createProgress(maxSteps: number): (step: TrajectoryStep) => void {
  return (step) => {
    const tools = step.toolCalls.map((c) => `${c.name}${describeCall(c.name, c.arguments)}`).join(', ');
    const secs = ((step.llmMs + step.toolMs) / 1000).toFixed(1);
    process.stderr.write(`step ${step.index}/${maxSteps}  ${tools || '(final answer)'}  ${secs}s\n`);
  };
}

function describeCall(name: string, raw: string): string {
  try {
    const args = JSON.parse(raw) as Record<string, unknown>;
    const main =
      name === 'Bash' ? args.command : name === 'Glob' ? args.pattern : (args.file_path ?? args.path);
    if (typeof main !== 'string') return '';
    const oneLine = main.replace(/\s+/g, ' ');
    return ` ${oneLine.length > 60 ? `${oneLine.slice(0, 57)}...` : oneLine}`;
  } catch {
    return '';
  }
}

/** What `run` prints at the end, from `summary.json` (the folder publisher's). */
function formatRunSummary(s: FolderSummary, replay: boolean): string {
  const tests = s.tests;
  const lines = [
    '',
    `outcome       ${describeOutcome(s)} (exit code ${s.exitCode})`,
    `exit reason   ${s.exitReason ?? 'none (the agent did not run)'}${s.error ? ` (${s.error})` : ''}`,
    `steps         ${s.steps}`,
    `tokens        ${
      replay && s.tokens.prompt + s.tokens.completion === 0
        ? 'none reported (the recording has no usage)'
        : `${s.tokens.prompt} prompt, ${s.tokens.completion} completion`
    }`,
    `files changed ${s.filesChanged.length === 0 ? 'none' : s.filesChanged.join(', ')}`,
    `tests         ${
      tests
        ? `${tests.passed ? 'passed' : tests.timedOut ? 'timed out' : `failed (exit ${tests.exitCode})`}: ${tests.command}`
        : 'not run (no patch or no test command found)'
    }`,
    ...(s.verdict ? [`base → head   ${s.verdict}`] : []),
    `time          ${(s.elapsedMs / 1000).toFixed(1)} s`,
    `model         ${String(s.model)}`,
    `written to    ${s.out}/{patch.diff,trajectory.json,summary.json}`,
  ];
  for (const w of s.warnings) lines.push('', `WARNING: ${w}`);
  for (const r of s.refusals) lines.push('', `REFUSED: ${r.reason}`, ...r.details.map((d) => `  ${d}`));
  for (const d of s.outcome.kind === 'refused' && s.refusals.length === 0 ? s.outcome.details : [])
    lines.push(`  ${d}`);
  if (s.finalMessage) {
    const msg = s.finalMessage.trim().split('\n').slice(0, 6).join('\n  ');
    lines.push('', 'final message (model output):', `  ${msg}`);
  }
  if (replay) {
    lines.push(
      '',
      'The model was REPLAYED from a recorded trajectory: the tools, sandbox and tests ran for real, the',
      `model's messages did not come from a live model. Point --model-url at an SGLang server to use one.`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The outcome for people: "patch ready", flagged, or the kind with its message. */
function describeOutcome(s: FolderSummary): string {
  if (s.exitCode === RUN_EXIT_CODES.patchReady) return 'patch ready';
  if (s.exitCode === RUN_EXIT_CODES.patchFlagged)
    return 'patch ready but FLAGGED: it modifies tests (see the warning)';
  return `${s.outcome.kind}${s.outcome.message ? `: ${firstLine(s.outcome.message)}` : ''}`;
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
