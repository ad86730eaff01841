/**
 * Worker memory with 4 concurrent jobs (DESIGN.md budget: < 150 MB RSS).
 *
 * What it measures: the resident set size (Linux `/proc/<pid>/status` VmRSS, sampled every 200 ms,
 * and VmHWM, the kernel's high-water mark, which also catches spikes between samples and at
 * start-up) of ONE process, `node dist/bin/cli.js worker` — the
 * production entry point, built JavaScript, no tsx — with WORKER_CONCURRENCY=4 while it runs four
 * real jobs at once: clone over git smart HTTP from the GitHub Enterprise stand-in, local bubblewrap
 * sandbox, the Leaf loop against a scripted model server (three turns, 1 s each, like a slow model),
 * pytest on base and head, push, draft pull request. The jobs come from the real `serve` (signed
 * webhooks), one per repository, since the default admin policy allows one job per repository.
 *
 * The sandbox processes (bwrap, the in-sandbox agent, pytest) are the worker's descendants here
 * but separate pods under the Kubernetes driver, so they are NOT in the budget figure; their sum
 * with the worker is printed for information (a sum of RSS counts shared pages more than once).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe } from '../src/bin/commands/serve.js';
import { loadEnv } from '../src/config/env.js';
import {
  startScriptedModelServer,
  type RecordedRequest,
  type ScriptedTurn,
} from '../test/helpers/scripted-model-server.js';
import { BENCH_OWNER, BENCH_SENDER, type BenchRig } from './github-app-rig.js';

const JOBS = 4;
/** Bound on the whole measurement once the jobs are queued, ms. */
const JOBS_TIMEOUT_MS = 180_000;
const SAMPLE_EVERY_MS = 200;
const BUDGET_MB = 150;

const FILES = {
  'calc.py': 'def add(a, b):\n    return a - b\n',
  'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
};

/** The model's turn for a request, chosen by how many assistant messages it already holds. */
function turnFor(request: RecordedRequest): ScriptedTurn {
  const messages = request.body.messages as Array<{ role: string }>;
  const done = messages.filter((m) => m.role === 'assistant').length;
  const delayMs = 1000;
  if (done === 0)
    return { kind: 'tool_calls', delayMs, calls: [{ name: 'Read', arguments: { file_path: 'calc.py' } }] };
  if (done === 1) {
    return {
      kind: 'tool_calls',
      delayMs,
      calls: [
        { name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a + b' } },
      ],
    };
  }
  return { kind: 'final', delayMs, content: 'add() subtracted; it now returns a + b.' };
}

/**
 * Run the measurement and print it. Children, servers and Redis keys are registered with
 * `rig.defer` / `rig.newPrefix` and removed when the rig closes.
 *
 * @throws Error when dist/ is not built, the worker child exits early, or the jobs do not finish
 *   within 180 s (the message carries the tail of the child's output).
 */
export async function measureWorkerMemory(rig: BenchRig): Promise<void> {
  const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
  const cli = join(repoRoot, 'dist', 'bin', 'cli.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` first`);

  const { ghe } = rig;
  const model = await startScriptedModelServer({ script: (req) => turnFor(req) });
  rig.defer('close the memory model server', () => model.close());
  const repos: string[] = [];
  for (let i = 1; i <= JOBS; i++) {
    const name = `bench-memory-${i}`;
    await ghe.createRepo(BENCH_OWNER, name, { files: FILES });
    ghe.setPermission(BENCH_OWNER, name, BENCH_SENDER, 'write');
    repos.push(name);
  }
  const prefix = rig.newPrefix('memory');
  const vars = rig.envVars(prefix, {
    MODEL_URL: model.url,
    WORKER_CONCURRENCY: String(JOBS),
    LOG_LEVEL: 'warn',
    CANCEL_POLL_MS: '500',
  });
  const env = loadEnv(vars);
  const serve = await startServe({ env, logger: rig.logger, port: 0, host: '127.0.0.1' });
  rig.defer('stop serve (memory)', () => serve.close());

  // The child's sandbox workspaces go below the rig's folder, removed even if the child is killed.
  const childTmp = join(rig.root, prefix, 'tmp');
  await mkdir(childTmp, { recursive: true });
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...vars, TMPDIR: childTmp };
  delete childEnv.NODE_OPTIONS; // no loader hooks (tsx) in the measured process
  const child = spawn(process.execPath, [cli, 'worker'], {
    cwd: repoRoot,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const keep = (c: Buffer) => (output = (output + c.toString()).slice(-3000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start the worker child');
  rig.defer('stop the worker child', async () => {
    if (running()) process.kill(pid, 'SIGTERM');
    const timer = setTimeout(() => {
      if (running()) process.kill(-pid, 'SIGKILL'); // the whole group: sandbox processes too
    }, 15_000);
    await exited;
    clearTimeout(timer);
  });
  const tail = () => (output.trim() ? `; worker output: ${output.trim().slice(-800)}` : '');

  // Idle: wait until the worker's BullMQ connection is registered, then let it settle.
  const deadline = Date.now() + 30_000;
  while ((await serve.jobs.queue.getWorkersCount()) === 0) {
    if (!running()) throw new Error(`the worker child exited (code ${child.exitCode})${tail()}`);
    if (Date.now() > deadline) throw new Error(`the worker child did not connect within 30 s${tail()}`);
    await sleep(100);
  }
  await sleep(1000);
  const idle = readMemory(pid);

  const t0 = Date.now();
  const responses = await Promise.all(
    repos.map((repo) => {
      const issue = ghe.createIssue(BENCH_OWNER, repo, {
        title: 'add() returns the difference',
        body: 'add(2, 3) returns -1 instead of 5.',
        user: BENCH_SENDER,
      });
      const payload = ghe.labelIssue({
        owner: BENCH_OWNER,
        repo,
        issueNumber: issue.number,
        sender: BENCH_SENDER,
        label: env.triggerLabel,
      });
      return ghe.sendWebhook(serve.webhookUrl, 'issues', payload);
    }),
  );
  const bad = responses.find((r) => r.status !== 200);
  if (bad) throw new Error(`a webhook got HTTP ${bad.status}: ${bad.body.slice(0, 300)}`);

  let peakRss = 0;
  let peakTree = 0;
  let peakRssWith4 = 0;
  let maxActive = 0;
  for (;;) {
    if (!running())
      throw new Error(`the worker child exited during the jobs (code ${child.exitCode})${tail()}`);
    if (Date.now() - t0 > JOBS_TIMEOUT_MS) {
      throw new Error(`the ${JOBS} jobs did not finish within ${JOBS_TIMEOUT_MS / 1000} s${tail()}`);
    }
    const counts = await serve.jobs.queue.getJobCounts('active', 'completed', 'failed');
    const mem = readMemory(pid);
    peakRss = Math.max(peakRss, mem.rssKb);
    peakTree = Math.max(peakTree, treeRssKb(pid));
    const active = counts.active ?? 0;
    maxActive = Math.max(maxActive, active);
    if (active >= JOBS) peakRssWith4 = Math.max(peakRssWith4, mem.rssKb);
    if ((counts.completed ?? 0) + (counts.failed ?? 0) >= JOBS) break;
    await sleep(SAMPLE_EVERY_MS);
  }
  const elapsedS = (Date.now() - t0) / 1000;
  const hwm = readMemory(pid).hwmKb;
  const finished = await serve.jobs.queue.getJobs(['completed', 'failed']);
  const outcomes = finished
    .map((j) => (j.returnvalue as { outcome?: string } | null)?.outcome ?? `failed (${j.failedReason})`)
    .sort()
    .join(', ');

  const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MB`;
  console.log(
    `\nWorker memory: \`node dist/bin/cli.js worker\`, WORKER_CONCURRENCY ${JOBS}, ${JOBS} real jobs ` +
      `(local sandbox, scripted model 1 s/turn) in ${elapsedS.toFixed(0)} s; at most ${maxActive} active at once; ` +
      `outcomes: ${outcomes}`,
  );
  const with4 = peakRssWith4 > 0 ? mb(peakRssWith4) : `no sample saw all ${JOBS} active`;
  console.log(
    `${'worker RSS, 4 concurrent jobs'.padEnd(34)} peak ${mb(peakRss).padStart(9)}   ` +
      `(with all ${JOBS} active: ${with4}; idle before: ${mb(idle.rssKb)})   budget < ${BUDGET_MB} MB`,
  );
  console.log(
    `${'  kernel high-water mark (VmHWM)'.padEnd(34)} ${mb(hwm)} at the end, ${mb(idle.hwmKb)} before the jobs`,
  );
  console.log(
    `${'+ sandbox processes (not budgeted)'.padEnd(34)} peak ${mb(peakTree).padStart(9)}   (sum of RSS over the worker's process tree)`,
  );
}

/** VmRSS and VmHWM of `pid` in KiB (Linux /proc); zeros when the process is gone. */
function readMemory(pid: number): { rssKb: number; hwmKb: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
  } catch {
    return { rssKb: 0, hwmKb: 0 };
  }
}

/** Sum of VmRSS (KiB) over `root` and all its descendants, from /proc/<pid>/stat parent links. */
function treeRssKb(root: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name, which is in parentheses and may contain anything.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(rest[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // the process ended while we read
    }
  }
  let total = 0;
  const stack = [root];
  while (stack.length > 0) {
    const p = stack.pop()!;
    total += readMemory(p).rssKb;
    stack.push(...(children.get(p) ?? []));
  }
  return total;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
