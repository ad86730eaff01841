import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AppError, isAppError } from '../../app-error.js';
import { EMPTY_ADMIN_POLICY, parseAdminPolicy, resolveEvalDefaults } from '../../config/policy.js';
import { createIssueFetcher } from '../../eval/issue-text.js';
import { formatMineReport, mineTasks } from '../../eval/mine-tasks.js';
import { formatTaskLine } from '../../eval/swe-bench-task.js';
import { parseEvalRunOptions, planEvalRun, runEvalTasks } from '../../eval/eval-run.js';
import { createProgress } from '../../eval/progress.js';
import { createEvalTaskRunner } from '../../eval/run-eval-task.js';
import { writeReport, type WrittenReport } from '../../eval/write-report.js';
import { createChatModelFromUrl } from '../../leaf/replay-model.js';
import { listModels } from '../../llm/sglang-client.js';
import { runGit } from '../../git/run-git.js';
import { createLogger } from '../../observability/logger.js';
import { createProbedSandboxFactory } from '../../pipeline/probed-sandbox-factory.js';
import type { EgressTarget } from '../../sandbox/egress-probe.js';
import { createLocalSandboxFactory } from '../../sandbox/local/local-sandbox.js';
import { startLocalRunGuard } from './local-run-guard.js';
import { DEFAULT_MODEL, isHttpUrl } from './run.js';

const USAGE = `usage: frognano-bot eval <subcommand> [options]

Measure FrogNano on tasks in SWE-bench's instance format, from your own repositories' history.

  eval run TASKS.jsonl --model-url URL --out DIR [options]
                                    run every task through the pipeline, grade it with its hidden
                                    tests, write predictions.jsonl and the report (resumable)
  eval mine --repo PATH [options]   write tasks mined from a repository's history (JSON Lines)
  eval report --out DIR             re-render report.md, report.html, summary.json and
                                    predictions.jsonl of a results folder from its results.jsonl

eval run options:
  --model-url URL       OpenAI-compatible endpoint of SGLang (required)
  --model NAME          model name sent to the server and written to the predictions
                        (default ${DEFAULT_MODEL})
  --out DIR             the results folder (required); a rerun with the same folder skips the
                        tasks finished there
  --repos DIR           a folder of mirrors (DIR/owner/name, DIR/owner__name, DIR/name, .git too)
  --repo-map FILE       owner/name: path or clone URL (YAML or JSON); one of the two is required
  --candidates K        independent candidates per task, best-of-N (--attempts K: the old name)
  --concurrency C       tasks at once
  --max-steps N         step cap of each candidate
  --max-time SEC        wall-clock cap of each candidate
  --test-timeout SEC    limit of each test run
  --test-command CMD    the test command (default: detected)
  --setup-command CMD   command run before the tests (offline)
  --policy FILE         admin policy whose "eval" section gives the defaults (default: env
                        POLICY_FILE); the command line wins, the policy's limits hold

eval mine options:
  --repo PATH           the repository (a local clone; its first-parent history of HEAD is read)
  --since DATE          only commits after DATE (anything git log --since takes, e.g. 2025-01-01)
  --limit N             stop after N tasks (newest commits first)
  --out FILE            where to write the tasks (default tasks.jsonl); the mine report goes next
                        to it (<name>.mine-report.json)
  --repo-name O/N       the tasks' "repo" (default: from the origin remote, else local/<folder>)
  --github-url URL      GitHub REST API root (e.g. https://ghe.example.com/api/v3) to read the
                        issue a commit fixes ("Fixes #12"); without it the commit message is used
  --token TOKEN         token for --github-url (default: env GITHUB_TOKEN)
  --test-command CMD    the test command (default: detected, as for labelled issues)
  --setup-command CMD   command run before the tests (offline)
  --test-timeout SEC    limit of each test run (default: the policy's eval.testTimeoutSec, 1800)
  --policy FILE         admin policy whose "eval" section gives defaults (default: env POLICY_FILE)

eval report options:
  --out DIR             the results folder
  --title TEXT          the report's title (default "FrogNano evaluation")

Tests run in the local bubblewrap sandbox, offline (the egress probe runs first). An evaluation never
writes to GitHub. Exit code: 0 on success (for eval run: the run completed, whatever the resolved
rate); 1 on failure (no model server, a repository not found, a sandbox that reaches the network);
2 for a usage error; 130 interrupted (eval run resumes with the same --out).`;

/** `frognano-bot eval`: mining of tasks from history and the evaluation report. */
export async function main(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) return usageError('no subcommand given');
  if (sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (sub === 'run') return runEval(rest);
  if (sub === 'mine') return mine(rest);
  if (sub === 'report') return report(rest);
  return usageError(`unknown subcommand "${sub}"`);
}

function usageError(message: string): number {
  process.stderr.write(`frognano-bot eval: ${message}\n\n${USAGE}\n`);
  return 2;
}

function parse(argv: string[], options: NonNullable<Parameters<typeof parseArgs>[0]>['options']) {
  try {
    return parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
  } catch (err) {
    return (err as Error).message;
  }
}

/** A whole number above 0, or the usage error message. */
export function positiveInt(value: string | undefined, flag: string): number | undefined | string {
  if (value === undefined) return undefined;
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : `${flag} must be a whole number above 0 (got "${value}")`;
}

async function mine(argv: string[]): Promise<number> {
  const parsed = parse(argv, {
    repo: { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string' },
    out: { type: 'string', default: 'tasks.jsonl' },
    'repo-name': { type: 'string' },
    'github-url': { type: 'string' },
    token: { type: 'string' },
    'test-command': { type: 'string' },
    'setup-command': { type: 'string' },
    'test-timeout': { type: 'string' },
    policy: { type: 'string' },
  });
  if (typeof parsed === 'string') return usageError(parsed);
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const str = (k: string): string | undefined => (typeof v[k] === 'string' ? v[k] : undefined);
  const repo = str('repo');
  if (!repo) return usageError('--repo is required');
  if (!existsSync(repo)) return usageError(`--repo ${repo} does not exist`);
  if (!(await isGitRepository(repo))) return usageError(`--repo ${repo} is not a git repository`);
  const limit = positiveInt(str('limit'), '--limit');
  const timeout = positiveInt(str('test-timeout'), '--test-timeout');
  if (typeof limit === 'string') return usageError(limit);
  if (typeof timeout === 'string') return usageError(timeout);
  const repoName = str('repo-name') ?? (await repoNameOf(repo));
  if (!/^[\w.-]+\/[\w.-]+$/.test(repoName))
    return usageError(`--repo-name must be "owner/name" (got "${repoName}")`);
  const defaults = resolveEvalDefaults(await loadPolicy(str('policy') ?? process.env.POLICY_FILE));

  const logger = createLogger({
    level: process.env.LOG_LEVEL ?? 'warn',
    destination: process.stderr as never,
  });
  const githubUrl = str('github-url');
  const guard = await startLocalRunGuard();
  try {
    const targets: EgressTarget[] = [
      guard.canaryTarget,
      ...(githubUrl ? [{ name: 'github', url: new URL(githubUrl).origin }] : []),
    ];
    const out = resolve(str('out') ?? 'tasks.jsonl');
    const report = await mineTasks({
      repoDir: resolve(repo),
      repoName,
      since: str('since'),
      limit,
      sandboxFactory: createProbedSandboxFactory(localFactory(logger), targets, logger),
      testCommand: str('test-command') ?? null,
      setupCommand: str('setup-command') ?? null,
      timeoutMs: (timeout ?? defaults.testTimeoutSec) * 1000,
      logger,
      fetchIssue: githubUrl
        ? createIssueFetcher({
            apiUrl: githubUrl,
            repo: repoName,
            token: str('token') ?? process.env.GITHUB_TOKEN,
            logger,
          })
        : undefined,
      onCommit: (c) =>
        process.stderr.write(`${c.sha.slice(0, 12)}  ${c.dropped ? `dropped: ${c.dropped}` : 'task'}\n`),
    });
    await writeFile(out, report.tasks.map(formatTaskLine).join(''));
    const reportFile = `${out.replace(/\.jsonl$/, '')}.mine-report.json`;
    const { tasks, ...facts } = report;
    await writeFile(
      reportFile,
      `${JSON.stringify({ ...facts, tasks: tasks.map((t) => t.instance_id) }, null, 2)}\n`,
    );
    process.stdout.write(`\n${formatMineReport(report, out)}\nmine report written to ${reportFile}\n`);
    return 0;
  } finally {
    await guard.release();
  }
}

async function report(argv: string[]): Promise<number> {
  const parsed = parse(argv, { out: { type: 'string' }, title: { type: 'string' } });
  if (typeof parsed === 'string') return usageError(parsed);
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (typeof v.out !== 'string') return usageError('--out is required');
  const outDir = resolve(v.out);
  if (!existsSync(resolve(outDir, 'results.jsonl'))) {
    process.stderr.write(
      `frognano-bot eval report: ${outDir} has no results.jsonl (no task finished there yet)\n`,
    );
    return 1;
  }
  const written = await writeReport(outDir, { title: typeof v.title === 'string' ? v.title : undefined });
  process.stdout.write(formatEvalSummary(written));
  return 0;
}

async function loadPolicy(file: string | undefined) {
  if (!file) return EMPTY_ADMIN_POLICY;
  try {
    return parseAdminPolicy(await readFile(file, 'utf8'), file);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError('CONFIG_INVALID', `cannot read the policy ${file}: ${(err as Error).message}`);
  }
}

/** `owner/name` from the origin remote's URL, else `local/<folder name>`. */
async function repoNameOf(dir: string): Promise<string> {
  const url = await runGit(['remote', 'get-url', 'origin'], { cwd: dir }).then(
    (r) => r.stdout.toString('utf8').trim(),
    () => '',
  );
  const m = /[/:]([\w.-]+)\/([\w.-]+?)(?:\.git)?\/?$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : `local/${basename(resolve(dir)).replace(/[^\w.-]/g, '-')}`;
}

function localFactory(logger: ReturnType<typeof createLogger>) {
  return createLocalSandboxFactory({
    logger,
    onUnenforced: (message) => process.stderr.write(`frognano-bot eval: warning: ${message}\n`),
  });
}

/**
 * `eval run`: every pending task through the pipeline (`createEvalTaskRunner`), `--concurrency` at
 * a time, with the probed local sandbox factory (a loopback canary and the model server must not
 * answer from inside), then predictions.jsonl and the report.
 */
async function runEval(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const policyAt = argv.indexOf('--policy');
  const policyFile = policyAt >= 0 ? argv[policyAt + 1] : process.env.POLICY_FILE;
  const rest = policyAt >= 0 ? argv.filter((_, i) => i !== policyAt && i !== policyAt + 1) : argv;
  const options = parseEvalRunOptions(rest, resolveEvalDefaults(await loadPolicy(policyFile)));
  if (typeof options === 'string') return usageError(options);
  if (!isHttpUrl(options.modelUrl))
    return usageError(
      `--model-url must be the http:// or https:// URL of an OpenAI-compatible server such as SGLang ` +
        `(got "${options.modelUrl}"); replay: recordings are for \`run\` only, one recording cannot answer many tasks`,
    );
  const fail = (message: string): number => {
    process.stderr.write(`frognano-bot eval run: ${message}\n`);
    return 1;
  };
  const outDir = resolve(options.outDir);
  let plan;
  try {
    plan = await planEvalRun({ ...options, outDir });
  } catch (err) {
    if (err instanceof AppError) return fail(err.message);
    throw err;
  }
  const logger = createLogger({
    level: process.env.LOG_LEVEL ?? 'warn',
    destination: process.stderr as never,
  });
  const apiKey = process.env.MODEL_API_KEY;
  const model = options.model ?? DEFAULT_MODEL;
  if (plan.pending.length > 0) {
    try {
      await listModels(options.modelUrl, apiKey);
    } catch (err) {
      return fail((err as Error).message);
    }
  }
  const guard = await startLocalRunGuard();
  const workDir = await mkdtemp(join(tmpdir(), 'frognano-eval-'));
  try {
    const targets: EgressTarget[] = [guard.canaryTarget, { name: 'model-server', url: options.modelUrl }];
    const client = createChatModelFromUrl(options.modelUrl, { model, apiKey, logger });
    const written = await runEvalTasks({
      plan,
      outDir,
      concurrency: options.concurrency,
      model,
      progress: createProgress(process.stderr, plan.total),
      runTask: createEvalTaskRunner({
        options: { ...options, outDir },
        model,
        sandboxFactory: createProbedSandboxFactory(localFactory(logger), targets, logger),
        createModel: () => client,
        logger,
        signal: guard.signal,
        workDir,
      }),
    });
    process.stdout.write(formatEvalSummary(written));
    return 0;
  } catch (err) {
    if (isAppError(err, 'CANCELLED')) {
      process.stderr.write(
        `\nfrognano-bot eval run: interrupted; run again with --out ${outDir} to resume\n`,
      );
      return 130;
    }
    if (err instanceof AppError) return fail(err.message);
    throw err;
  } finally {
    await guard.release();
    await rm(workDir, { recursive: true, force: true });
  }
}

/** The last lines of `eval run` and `eval report`: the resolved rate with its interval, pass@k, the files. */
function formatEvalSummary(written: WrittenReport): string {
  const s = written.summary;
  const [lo, hi] = s.resolvedRateCi95.map((x) => `${(100 * x).toFixed(1)}%`);
  return (
    `${s.resolved} of ${s.tasks} tasks resolved (${(100 * s.resolvedRate).toFixed(1)}%, 95% CI ${lo}–${hi}); pass@1 ${(100 * s.passAt1).toFixed(1)}%` +
    `${s.passAtK && s.passAtK.k > 1 ? `, pass@${s.passAtK.k} ${(100 * s.passAtK.value).toFixed(1)}%` : ''}\n` +
    (written.skipped.length > 0 ? `skipped unreadable lines: ${written.skipped.join(', ')}\n` : '') +
    `written: ${written.files.join(', ')}\n`
  );
}

/** Whether `dir` is (inside) a git repository's work tree or a bare repository. */
async function isGitRepository(dir: string): Promise<boolean> {
  try {
    await runGit(['rev-parse', '--git-dir'], { cwd: dir });
    return true;
  } catch {
    return false;
  }
}
