import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { AppError } from '../../app-error.js';
import { applyPatch } from '../../git/apply-patch.js';
import { archiveTrackedFiles } from '../../git/archive-tracked-files.js';
import { runAgentLoop } from '../../leaf/agent-loop.js';
import type { Trajectory, TrajectoryStep } from '../../leaf/trajectory.js';
import { filesInPatch } from '../../leaf/workspace-patch.js';
import { listModels } from '../../llm/sglang-client.js';
import { createChatModelFromUrl } from '../../leaf/replay-model.js';
import { createLogger } from '../../observability/logger.js';
import type { Logger } from '../../observability/logger.js';
import { prepareSandbox } from '../../pipeline/prepare-sandbox.js';
import { runTests as runTestsInSandbox } from '../../pipeline/run-tests.js';
import { assertEgressBlocked, type EgressTarget } from '../../sandbox/egress-probe.js';
import { createLocalSandboxFactory } from '../../sandbox/local/local-sandbox.js';
import type { Sandbox } from '../../sandbox/sandbox.js';

const run = promisify(execFile);

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

Exit code: 0 when the agent finished and produced a patch; 1 otherwise; 2 for a usage error;
3 when no model server answers.`;

/** `frognano-bot run`: the Leaf loop on a local repository, in a local bubblewrap sandbox. */
export async function main(argv: string[]): Promise<number> {
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
    process.stderr.write(`frognano-bot run: ${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const usageError = (msg: string): number => {
    process.stderr.write(`frognano-bot run: ${msg}\n\n${USAGE}\n`);
    return 2;
  };
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

  const issueText = await readIssue(values.issue);
  if (!issueText.trim()) return usageError('the issue text is empty');

  const logger = createLogger({
    level: process.env.LOG_LEVEL ?? 'warn',
    destination: process.stderr as never,
  });
  const apiKey = values['api-key'] ?? process.env.MODEL_API_KEY;
  if (!replay) {
    try {
      await listModels(modelUrl, apiKey);
    } catch (err) {
      process.stderr.write(
        `frognano-bot run: no model server answers at ${modelUrl} (${(err as Error).message}).\n` +
          `Start SGLang with FrogNano-4B, for example:\n  ${SGLANG_LAUNCH_HINT}\n` +
          `or pass --model-url replay:<trajectory.json> to replay a recorded run.\n`,
      );
      return 3;
    }
  }
  const model = createChatModelFromUrl(modelUrl, { model: values.model, apiKey, logger });

  const outDir = resolve(values.out);
  await mkdir(outDir, { recursive: true });
  const jobId = `run-${randomUUID().slice(0, 8)}`;
  const tmp = await mkdtemp(join(tmpdir(), 'frognano-run-'));
  const workdir = join(tmp, 'repo');
  const controller = new AbortController();
  const onSignal = (): void => controller.abort(new AppError('CANCELLED', 'interrupted (SIGINT/SIGTERM)'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // Limits this host cannot enforce (e.g. a non-root user without delegated cgroups) are a
  // warning for this single-user command; the worker refuses such sandboxes instead.
  const factory = createLocalSandboxFactory({
    logger,
    onUnenforced: (message) =>
      process.stderr.write(
        `frognano-bot run: warning: ${message}\n  The sandbox still has no network and no credentials. What each limit needs: README, "Security".\n`,
      ),
  });
  const canary = await startCanary();
  const started = Date.now();
  try {
    await prepareWorkspace(values.repo, workdir);
    const probeTargets = egressTargets(canary, replay ? null : modelUrl, values.repo);
    const assertOffline = (s: Sandbox): Promise<void> => assertEgressBlocked(s, probeTargets);
    // The sandbox gets a copy of the tracked files, never the repository's .git.
    const { sandbox } = await prepareSandbox({
      sandboxFactory: factory,
      sandboxId: jobId,
      tree: () => archiveTrackedFiles(workdir, { signal: controller.signal }),
      setupCommand: null,
      signal: controller.signal,
      logger,
    });
    let trajectory: Trajectory;
    try {
      const progress = createProgress(maxSteps ?? 150);
      trajectory = await runAgentLoop({
        model,
        sandbox,
        instruction: buildLocalInstruction(issueText),
        jobId,
        limits: { maxSteps, maxTimeMs: maxTimeSec === undefined ? undefined : maxTimeSec * 1000 },
        signal: controller.signal,
        logger,
        trajectoryPath: join(outDir, 'trajectory.json'),
        onStep: (step) => progress(step),
      });
    } finally {
      await sandbox.destroy();
    }
    const patch = trajectory.patch ?? '';
    await writeFile(join(outDir, 'patch.diff'), patch);
    // The patch goes to the worker's own fresh repository: what the model did to the sandbox's
    // .git (hooks, core.fsmonitor, …) never leaves the sandbox.
    if (patch) await applyPatch(workdir, patch, { signal: controller.signal });

    let tests: TestResult | null = null;
    if (patch && values['test-command'] !== 'none' && !controller.signal.aborted) {
      tests = await runTests(factory, workdir, jobId, values['test-command'], assertOffline, logger);
    }
    const summary = {
      jobId,
      exitReason: trajectory.exitReason,
      error: trajectory.error,
      steps: trajectory.steps.length,
      tokens: trajectory.totalTokens,
      contextTokens: trajectory.contextTokens,
      filesChanged: filesInPatch(patch),
      elapsedMs: Date.now() - started,
      model: replay ? `replay of ${modelUrl.slice('replay:'.length)}` : `${values.model} at ${modelUrl}`,
      tests,
      finalMessage: trajectory.finalMessage,
      out: outDir,
    };
    await writeFile(join(outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    process.stdout.write(formatSummary(summary, replay));
    if (values.keep)
      process.stdout.write(
        `workspace kept at ${workdir} (a fresh repository: the base commit, the patch applied and staged)\n`,
      );
    return trajectory.exitReason === 'agent' && patch.length > 0 ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await new Promise((r) => canary.close(r));
    if (!values.keep) await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * A TCP listener on the host's loopback, probed from inside the sandbox with the other targets: a
 * sandbox that shares the host's network reaches it whatever else runs on this machine.
 */
async function startCanary(): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  server.unref();
  return server;
}

/** What the sandboxes of `run` must not reach: the loopback canary, the model server, the repository's host. */
function egressTargets(canary: Server, modelUrl: string | null, repo: string): EgressTarget[] {
  const targets: EgressTarget[] = [
    { name: 'host loopback', url: `http://127.0.0.1:${(canary.address() as AddressInfo).port}` },
  ];
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
function isHttpUrl(text: string): boolean {
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

/** The user message for a local run: the issue text, quoted as data. */
export function buildLocalInstruction(issueText: string): string {
  return `Resolve the following issue in this repository.\n\n<issue>\n${issueText.trim()}\n</issue>`;
}

const GIT_ENV = {
  ...process.env,
  GIT_TERMINAL_PROMPT: '0',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'frognano-bot',
  GIT_AUTHOR_EMAIL: 'frognano-bot@localhost',
  GIT_COMMITTER_NAME: 'frognano-bot',
  GIT_COMMITTER_EMAIL: 'frognano-bot@localhost',
};

/**
 * Make `workdir` a FRESH repository holding `source`'s files at a base commit, with no remote:
 * a clone (of a local git repository's HEAD, or a git URL's default branch) or a copy (a plain
 * folder, without any `.git` in it). Fresh means a `.git` made here, with no hooks (`--template=`,
 * not even git's samples) and no config from the source: the sandbox gets only the tracked files
 * of it (through `archiveTrackedFiles`), and the patch is applied here afterwards.
 */
async function prepareWorkspace(source: string, workdir: string): Promise<void> {
  const git = (args: string[], cwd?: string) => run('git', args, { cwd, env: GIT_ENV, maxBuffer: 64 << 20 });
  const isDir = existsSync(source) && statSync(source).isDirectory();
  let isRepo = false;
  if (isDir) {
    try {
      const top = (await git(['rev-parse', '--show-toplevel'], source)).stdout.trim();
      isRepo = resolve(top) === resolve(source);
    } catch {
      isRepo = false;
    }
  }
  if (isDir && !isRepo) {
    await cp(source, workdir, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (p) => !p.split(/[\\/]/).includes('.git'),
    });
    await git(['init', '--quiet', '--template=', workdir]);
  } else {
    try {
      await git([
        'clone',
        '--quiet',
        '--template=',
        '--no-hardlinks',
        ...(isDir ? [] : ['--depth', '1']),
        source,
        workdir,
      ]);
    } catch (err) {
      throw new AppError(
        'CLONE_FAILED',
        `could not clone ${source}: ${(err as { stderr?: string }).stderr ?? err}`,
      );
    }
    await git(['remote', 'remove', 'origin'], workdir).catch(() => undefined);
  }
  await git(['add', '-A', '-f'], workdir);
  await git(['commit', '--quiet', '--no-verify', '--allow-empty', '-m', 'frognano: base'], workdir).catch(
    () => undefined,
  );
}

interface TestResult {
  command: string;
  reason: string;
  exitCode: number | null;
  passed: boolean;
  timedOut: boolean;
  outputTail: string;
}

/** The tests on the patched tree, in a fresh (egress-probed) sandbox, as the pipeline runs them. */
async function runTests(
  factory: ReturnType<typeof createLocalSandboxFactory>,
  workdir: string,
  jobId: string,
  given: string | undefined,
  assertOffline: (sandbox: Sandbox) => Promise<void>,
  logger: Logger,
): Promise<TestResult | null> {
  const r = await runTestsInSandbox({
    sandboxFactory: factory,
    sandboxId: `${jobId}-tests`,
    tree: () => archiveTrackedFiles(workdir),
    testCommand: given ?? null,
    setupCommand: null,
    timeoutMs: 15 * 60_000,
    logger,
  });
  if (!r) return null;
  return {
    command: r.command,
    reason: given ? '--test-command' : r.source,
    exitCode: r.exitCode,
    passed: r.passed,
    timedOut: r.timedOut,
    outputTail: r.outputTail.split('\n').slice(-15).join('\n').trim(),
  };
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

function formatSummary(
  s: {
    exitReason: string | null;
    error: string | null;
    steps: number;
    tokens: { prompt: number; completion: number };
    filesChanged: string[];
    elapsedMs: number;
    model: string;
    tests: TestResult | null;
    finalMessage: string | null;
    out: string;
  },
  replay: boolean,
): string {
  const lines = [
    '',
    `exit reason   ${s.exitReason}${s.error ? ` (${s.error})` : ''}`,
    `steps         ${s.steps}`,
    `tokens        ${
      replay && s.tokens.prompt + s.tokens.completion === 0
        ? 'none reported (the recording has no usage)'
        : `${s.tokens.prompt} prompt, ${s.tokens.completion} completion`
    }`,
    `files changed ${s.filesChanged.length === 0 ? 'none' : s.filesChanged.join(', ')}`,
    `tests         ${
      s.tests
        ? `${s.tests.passed ? 'passed' : s.tests.timedOut ? 'timed out' : `failed (exit ${s.tests.exitCode})`}: ${s.tests.command}`
        : 'not run (no patch or no test command found)'
    }`,
    `time          ${(s.elapsedMs / 1000).toFixed(1)} s`,
    `model         ${s.model}`,
    `written to    ${s.out}/{patch.diff,trajectory.json,summary.json}`,
  ];
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
