import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvalSummary } from '../../src/eval/eval-statistics.js';
import { taskResultSchema } from '../../src/eval/results-store.js';
import {
  formatTaskLine,
  sweBenchPredictionSchema,
  type SweBenchTask,
} from '../../src/eval/swe-bench-task.js';
import { diffOfPaths } from '../../src/eval/task-workspace.js';
import type { Trajectory } from '../../src/leaf/trajectory.js';
import { createHistoryRepo } from '../helpers/eval-history-repo.js';
import { createFixtureGit } from '../helpers/fixture-git.js';
import {
  startScriptedModelServer,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedTurn,
} from '../helpers/scripted-model-server.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/bin/cli.js');
const git = createFixtureGit({ identity: { name: 'Dev', email: 'dev@example.com' } });

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile('node', [CLI, ...args], { cwd: ROOT, timeout: 300_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

const SHOP = `def subtotal(prices):
    return sum(prices)


def total(prices, discount):
    """The total after taking the discount (a fraction, 0.25 = 25 % off)."""
    return subtotal(prices) * discount
`;
const SHOP_TESTS = `from shop import subtotal


def test_subtotal_keeps_cents():
    assert subtotal([1.5, 1.25]) == 2.75
`;
const SHOP_HIDDEN_TEST = `

def test_discount_is_a_fraction_off():
    from shop import total
    assert total([10, 10], 0.25) == 15
`;

/** A second small repository: a shop whose discount is applied wrongly. */
async function createShopRepo(root: string): Promise<{ dir: string; base: string; testPatch: string }> {
  const dir = join(root, 'shop');
  await mkdir(join(dir, 'tests'), { recursive: true });
  await git(dir, 'init', '-q', '-b', 'main');
  await writeFile(join(dir, 'shop.py'), SHOP);
  await writeFile(join(dir, 'tests', 'test_shop.py'), SHOP_TESTS);
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'Add shop');
  const base = (await git(dir, 'rev-parse', 'HEAD')).trim();
  await writeFile(join(dir, 'tests', 'test_shop.py'), SHOP_TESTS + SHOP_HIDDEN_TEST);
  await writeFile(join(dir, 'shop.py'), SHOP.replace('* discount', '* (1 - discount)'));
  await git(dir, 'commit', '-q', '-am', 'Fix the discount');
  const fix = (await git(dir, 'rev-parse', 'HEAD')).trim();
  return { dir, base, testPatch: await diffOfPaths(dir, base, fix, ['tests/test_shop.py']) };
}

const call = (name: string, args: Record<string, unknown>): ScriptedTurn => ({
  kind: 'tool_calls',
  calls: [{ name, arguments: args }],
});

/** What the scripted model does for each task (chosen by the problem statement it is given). */
const SCRIPTS: Record<string, ScriptedTurn[]> = {
  // Fixes the bug.
  clamp: [
    call('Read', { file_path: 'calc.py' }),
    call('Edit', {
      file_path: 'calc.py',
      old_string: 'return max(lo, x)',
      new_string: 'return max(lo, min(x, hi))',
    }),
    call('Bash', { command: 'python3 -m pytest -q' }),
    { kind: 'final', content: 'clamp now respects its upper bound.' },
  ],
  // Cannot: looks around and gives up without a change.
  mean: [call('Read', { file_path: 'calc.py' }), { kind: 'final', content: 'I could not find the cause.' }],
  // Fixes the discount but breaks a test that passed (subtotal loses its cents).
  discount: [
    call('Read', { file_path: 'shop.py' }),
    call('Edit', {
      file_path: 'shop.py',
      old_string: '    return sum(prices)\n',
      new_string: '    return round(sum(prices))\n',
    }),
    call('Edit', { file_path: 'shop.py', old_string: '* discount', new_string: '* (1 - discount)' }),
    { kind: 'final', content: 'The discount is taken off now.' },
  ],
};

function userText(request: RecordedRequest): string {
  const messages = (request.body?.messages ?? []) as Array<{ role: string; content: unknown }>;
  return messages
    .filter((m) => m.role === 'user')
    .map((m) => String(m.content))
    .join('\n');
}

function scriptFor(request: RecordedRequest): ScriptedTurn {
  const text = userText(request);
  const name = Object.keys(SCRIPTS).find((k) => text.includes(`<issue>\n${PROBLEMS[k]}`));
  const turns = name ? SCRIPTS[name]! : [];
  const turn = (request.body?.messages as Array<{ role: string }>).filter(
    (m) => m.role === 'assistant',
  ).length;
  return turns[turn] ?? { kind: 'final', content: 'done' };
}

const PROBLEMS: Record<string, string> = {
  clamp: 'clamp(50, 0, 10) returns 50: it ignores its upper bound.',
  mean: 'mean([]) raises ZeroDivisionError; it should return 0.',
  discount: 'total([10, 10], 0.25) returns 5; a discount of 0.25 should take 25 % off.',
};

describe('frognano-bot eval run (end to end: scripted SGLang server, real sandboxes, pytest)', () => {
  let root: string;
  let out: string;
  let tasksFile: string;
  let repoMap: string;
  let server: ScriptedModelServer;
  let tasks: SweBenchTask[];

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does it)`);
    root = await mkdtemp(join(tmpdir(), 'eval-run-'));
    const calc = await createHistoryRepo(root);
    const shop = await createShopRepo(root);
    const c = calc.commits;
    const calcTests = async (from: string, to: string) =>
      diffOfPaths(calc.dir, from, to, ['tests/test_calc.py']);
    tasks = [
      {
        instance_id: 'acme__calc-clamp',
        repo: 'acme/calc',
        base_commit: c.refactor,
        problem_statement: PROBLEMS.clamp!,
        test_patch: await calcTests(c.refactor, c.fixClamp),
        FAIL_TO_PASS: ['tests/test_calc.py::test_clamp_upper'],
        PASS_TO_PASS: ['tests/test_calc.py::test_add', 'tests/test_calc.py::test_clamp_lower'],
      },
      {
        instance_id: 'acme__calc-mean',
        repo: 'acme/calc',
        base_commit: c.initial,
        problem_statement: PROBLEMS.mean!,
        test_patch: await calcTests(c.initial, c.fixMean),
        FAIL_TO_PASS: ['tests/test_calc.py::test_mean_empty'],
        PASS_TO_PASS: ['tests/test_calc.py::test_add', 'tests/test_calc.py::test_clamp_lower'],
      },
      {
        instance_id: 'acme__shop-discount',
        repo: 'acme/shop',
        base_commit: shop.base,
        problem_statement: PROBLEMS.discount!,
        test_patch: shop.testPatch,
        FAIL_TO_PASS: ['tests/test_shop.py::test_discount_is_a_fraction_off'],
        PASS_TO_PASS: ['tests/test_shop.py::test_subtotal_keeps_cents'],
      },
    ];
    tasksFile = join(root, 'tasks.jsonl');
    await writeFile(tasksFile, tasks.map(formatTaskLine).join(''));
    repoMap = join(root, 'repos.json');
    await writeFile(repoMap, JSON.stringify({ 'acme/calc': calc.dir, 'acme/shop': shop.dir }));
    out = join(root, 'results');
    server = await startScriptedModelServer({ script: scriptFor });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  const evalRun = () =>
    runCli([
      'eval',
      'run',
      tasksFile,
      '--model-url',
      server.url,
      '--repo-map',
      repoMap,
      '--out',
      out,
      '--concurrency',
      '2',
    ]);

  it('runs the three tasks through the pipeline and reports 1 of 3 resolved', async () => {
    const r = await evalRun();
    expect(r.stderr).not.toContain('Error');
    expect(r.code).toBe(0);
    // Not a TTY: one plain line per task.
    expect(r.stderr).toMatch(/\[\d\/3\] acme__calc-clamp: resolved;/);
    expect(r.stderr).toMatch(/\[\d\/3\] acme__calc-mean: not resolved \(the candidate made no change\)/);
    expect(r.stdout).toContain('1 of 3 tasks resolved (33.3%');

    const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as EvalSummary;
    expect(summary).toMatchObject({ tasks: 3, resolved: 1, candidates: 1, errors: 0 });
    expect(summary.resolvedRate).toBeCloseTo(1 / 3);
    expect(summary.exitReasons).toEqual({ agent: 3 });
    const report = await readFile(join(out, 'report.md'), 'utf8');
    expect(report).toContain('(1 of 3; 95% CI');
    expect(report).toMatch(/`acme__calc-clamp` \| resolved +\| 1\/1/);
    expect(report).toMatch(/`acme__shop-discount` \| not resolved \| 0\/1/);

    const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => taskResultSchema.parse(JSON.parse(l)));
    const byId = new Map(results.map((x) => [x.instance_id, x]));
    expect(byId.get('acme__calc-clamp')).toMatchObject({
      chosen: 1,
      candidates: [{ k: 1, resolved: true, reason: null }],
    });
    expect(byId.get('acme__calc-mean')).toMatchObject({ chosen: null, modelPatch: '' });
    expect(byId.get('acme__calc-mean')!.candidates[0]!.reason).toBe('the candidate made no change');
    // The fix passes the hidden test, but a PASS_TO_PASS test breaks.
    const shop = byId.get('acme__shop-discount')!;
    expect(shop.chosen).toBe(1);
    expect(shop.candidates[0]!.reason).toBe(
      '1 PASS_TO_PASS test(s) fail: tests/test_shop.py::test_subtotal_keeps_cents',
    );

    // predictions.jsonl: SWE-bench's prediction fields, one line per task, the chosen patch.
    const predictions = (await readFile(join(out, 'predictions.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => sweBenchPredictionSchema.parse(JSON.parse(l)));
    expect(predictions.map((p) => p.instance_id).sort()).toEqual(tasks.map((t) => t.instance_id).sort());
    for (const p of predictions) expect(p.model_name_or_path).toBe('microsoft/FrogNano-4B-2609');
    const clampPatch = predictions.find((p) => p.instance_id === 'acme__calc-clamp')!.model_patch;
    expect(clampPatch).toContain('+    return max(lo, min(x, hi))');

    // One trajectory per task and candidate.
    const trajectory = JSON.parse(
      await readFile(join(out, 'trajectories', 'acme__calc-clamp', 'candidate-1.json'), 'utf8'),
    ) as Trajectory;
    expect(trajectory.steps).toHaveLength(4);
    expect(trajectory.steps[2]!.toolCalls[0]!.observation).toMatch(/^Exit code: 0/);
    expect(existsSync(join(out, 'trajectories', 'acme__shop-discount', 'candidate-1.json'))).toBe(true);

    // The hidden tests never reached the model: no request names them.
    expect(server.requests.length).toBe(4 + 2 + 4);
    for (const req of server.requests) {
      expect(req.rawBody).not.toContain('test_clamp_upper');
      expect(req.rawBody).not.toContain('test_mean_empty');
      expect(req.rawBody).not.toContain('test_discount_is_a_fraction_off');
    }
  }, 300_000);

  it('skips the finished tasks on a second run with the same --out, without asking the model', async () => {
    const before = server.requests.length;
    const r = await evalRun();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('[3/3] 3 tasks already finished in this folder, skipped');
    expect(server.requests.length).toBe(before);
    expect((await readFile(join(out, 'results.jsonl'), 'utf8')).trim().split('\n')).toHaveLength(3);
    expect(r.stdout).toContain('1 of 3 tasks resolved');
  }, 120_000);
});
