/**
 * The overhead of evaluation: the harness's own time per task of `eval run` (the pipeline's chain
 * with its sandboxes and egress probes, a 30-step scripted agent with an instant model, the patch
 * checks, the grading clone) against the time of the task's tests (base and head runs of the
 * verification, the grading run with the hidden tests). The same task runs several times; the
 * figures are medians and their ratio.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEvalRunOptions } from '../src/eval/eval-run.js';
import { createEvalTaskRunner } from '../src/eval/run-eval-task.js';
import type { TaskResult } from '../src/eval/results-store.js';
import type { SweBenchTask } from '../src/eval/swe-bench-task.js';
import { diffOfPaths } from '../src/eval/task-workspace.js';
import { BUILT_IN_EVAL_DEFAULTS } from '../src/config/policy.js';
import type { ChatModel, ChatResponse } from '../src/llm/chat-model.js';
import { createSilentLogger } from '../src/observability/logger.js';
import { createProbedSandboxFactory } from '../src/pipeline/probed-sandbox-factory.js';
import { createLocalSandboxFactory } from '../src/sandbox/local/local-sandbox.js';
import { createHistoryRepo } from '../test/helpers/eval-history-repo.js';

const STEPS = 30;
const RUNS = 5;

/** 28 cheap tool calls (Read, Glob, Bash), the fix (an Edit), then the final answer: 30 steps. */
function createScriptedModel(): ChatModel {
  let step = 0;
  const tool = (name: string, args: unknown): ChatResponse => ({
    message: {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${step}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    },
    finishReason: 'tool_calls',
    usage: { prompt_tokens: 1000 + step * 50, completion_tokens: 20, total_tokens: 1020 + step * 50 },
  });
  return {
    model: 'scripted',
    async complete() {
      step++;
      if (step === STEPS)
        return { message: { role: 'assistant', content: 'fixed' }, finishReason: 'stop', usage: null };
      if (step === STEPS - 1)
        return tool('Edit', {
          file_path: 'calc.py',
          old_string: 'return max(lo, x)',
          new_string: 'return max(lo, min(x, hi))',
        });
      const kind = step % 3;
      if (kind === 0) return tool('Bash', { command: 'ls tests' });
      if (kind === 1) return tool('Read', { file_path: 'calc.py' });
      return tool('Glob', { pattern: '**/*.py' });
    },
  };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Print the figures of {@link benchEvalOverhead}'s module comment. */
export async function benchEvalOverhead(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'frognano-bench-eval-'));
  const canary = createServer((s) => s.destroy());
  await new Promise<void>((r) => canary.listen(0, '127.0.0.1', r));
  try {
    const repo = await createHistoryRepo(root);
    const { refactor, fixClamp } = repo.commits;
    const options = parseEvalRunOptions(
      ['tasks.jsonl', '--model-url', 'http://127.0.0.1:9/v1', '--out', join(root, 'out'), '--repos', root],
      BUILT_IN_EVAL_DEFAULTS,
    );
    if (typeof options === 'string') throw new Error(options);
    const logger = createSilentLogger();
    const targets = [
      { name: 'host loopback', url: `http://127.0.0.1:${(canary.address() as AddressInfo).port}` },
    ];
    const runTask = createEvalTaskRunner({
      options,
      model: 'scripted',
      sandboxFactory: createProbedSandboxFactory(createLocalSandboxFactory({ logger }), targets, logger),
      createModel: createScriptedModel,
      logger,
      signal: new AbortController().signal,
      workDir: root,
    });
    const testPatch = await diffOfPaths(repo.dir, refactor, fixClamp, ['tests/test_calc.py']);
    await writeFile(join(root, 'tasks.jsonl'), '');
    const results: TaskResult[] = [];
    for (let i = 0; i < RUNS + 1; i++) {
      const task: SweBenchTask = {
        instance_id: `bench__calc-${i}`,
        repo: 'acme/calc',
        base_commit: refactor,
        problem_statement: 'clamp ignores its upper bound',
        test_patch: testPatch,
        FAIL_TO_PASS: ['tests/test_calc.py::test_clamp_upper'],
        PASS_TO_PASS: ['tests/test_calc.py::test_add', 'tests/test_calc.py::test_clamp_lower'],
      };
      const r = await runTask(task, { kind: 'path', path: repo.dir });
      if (i > 0) results.push(r); // the first run warms up
    }
    const total = median(results.map((r) => r.durationMs));
    const tests = median(results.map((r) => r.testsMs ?? 0));
    const harness = median(results.map((r) => r.durationMs - (r.testsMs ?? 0)));
    const resolved = results.filter((r) => r.candidates[0]?.resolved).length;
    const steps = results[0]?.candidates[0]?.steps ?? 0;
    console.log(
      `\neval run, one task (${steps}-step scripted agent, instant model, 3 pytest runs), median of ${RUNS}:`,
    );
    console.log(
      `  task            ${total.toFixed(0).padStart(6)} ms   (resolved ${resolved}/${results.length})`,
    );
    console.log(
      `  tests           ${tests.toFixed(0).padStart(6)} ms   (base, head, grading with the hidden tests)`,
    );
    console.log(
      `  harness         ${harness.toFixed(0).padStart(6)} ms   = ${(harness / tests).toFixed(2)}× the tests' time ` +
        `(${((100 * harness) / total).toFixed(0)}% of the task)`,
    );
  } finally {
    await new Promise((r) => canary.close(r));
    await rm(root, { recursive: true, force: true });
  }
}
