import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { basename, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AppError } from '../../app-error.js';
import { EMPTY_ADMIN_POLICY, parseAdminPolicy, resolveEvalDefaults } from '../../config/policy.js';
import { createIssueFetcher } from '../../eval/issue-text.js';
import { formatMineReport, mineTasks } from '../../eval/mine-tasks.js';
import { formatTaskLine } from '../../eval/swe-bench-task.js';
import { writeReport } from '../../eval/write-report.js';
import { runGit } from '../../git/run-git.js';
import { createLogger } from '../../observability/logger.js';
import { createProbedSandboxFactory } from '../../pipeline/probed-sandbox-factory.js';
import type { EgressTarget } from '../../sandbox/egress-probe.js';
import { createLocalSandboxFactory } from '../../sandbox/local/local-sandbox.js';

const USAGE = `usage: frognano-bot eval <subcommand> [options]

Measure FrogNano on tasks in SWE-bench's instance format, from your own repositories' history.

  eval mine --repo PATH [options]   write tasks mined from a repository's history (JSON Lines)
  eval report --out DIR             re-render report.md, report.html, summary.json and
                                    predictions.jsonl of a results folder from its results.jsonl

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
writes to GitHub. Exit code: 0 on success; 1 on failure; 2 for a usage error.`;

/** `frognano-bot eval`: mining of tasks from history and the evaluation report. */
export async function main(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) return usageError('no subcommand given');
  if (sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
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
  const canary = await startCanary();
  try {
    const targets: EgressTarget[] = [
      { name: 'host loopback', url: `http://127.0.0.1:${(canary.address() as AddressInfo).port}` },
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
    await new Promise((r) => canary.close(r));
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
  const s = written.summary;
  const [lo, hi] = s.resolvedRateCi95.map((x) => `${(100 * x).toFixed(1)}%`);
  process.stdout.write(
    `${s.resolved} of ${s.tasks} tasks resolved (${(100 * s.resolvedRate).toFixed(1)}%, 95% CI ${lo}–${hi}); pass@1 ${(100 * s.passAt1).toFixed(1)}%` +
      `${s.passAtK && s.passAtK.k > 1 ? `, pass@${s.passAtK.k} ${(100 * s.passAtK.value).toFixed(1)}%` : ''}\n` +
      (written.skipped.length > 0 ? `skipped unreadable lines: ${written.skipped.join(', ')}\n` : '') +
      `written: ${written.files.join(', ')}\n`,
  );
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

/** A loopback listener the sandbox must not reach (see `run`). */
async function startCanary(): Promise<Server> {
  const server = createServer((socket) => socket.destroy()).unref();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}
