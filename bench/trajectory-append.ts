/**
 * A scripted 150-step trajectory with 20 KB observations (DESIGN.md: < 3 s of harness time, and
 * step 150 costs what step 1 costs because the trajectory is appended, not rewritten). An instant
 * in-process model asks for a Read of a 20 KB file at every step, in the local bubblewrap sandbox;
 * the trajectory goes to a file as in a job. Printed: the total, the median cost of steps 6–15 and
 * 140–149 (time between two step ends: model + tool + journal append), and beside them what
 * rewriting the whole trajectory once costs at step 150 (the former per-step write).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAgentLoop } from '../src/leaf/agent-loop.js';
import type { Trajectory } from '../src/leaf/trajectory.js';
import type { ChatModel } from '../src/llm/chat-model.js';
import { createLocalSandboxFactory } from '../src/sandbox/local/local-sandbox.js';

const STEPS = 150;

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

/** Run the 150-step trajectory and print its figures. */
export async function benchTrajectoryAppend(): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'frognano-bench-traj-'));
  const workdir = join(tmp, 'repo');
  mkdirSync(workdir, { recursive: true });
  writeFileSync(join(workdir, 'obs.txt'), `${'z'.repeat(99)}\n`.repeat(200)); // 20 KB
  const sandbox = await createLocalSandboxFactory().create({ jobId: 'bench-traj', hostWorkdir: workdir });
  let step = 0;
  const model: ChatModel = {
    model: 'instant',
    async complete() {
      step++;
      if (step > STEPS - 1)
        return { message: { role: 'assistant', content: 'done' }, finishReason: 'stop', usage: null };
      return {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `c${step}`,
              type: 'function',
              function: { name: 'Read', arguments: '{"file_path":"obs.txt"}' },
            },
          ],
        },
        finishReason: 'tool_calls',
        usage: { prompt_tokens: 1000 + step * 50, completion_tokens: 20, total_tokens: 1020 + step * 50 },
      };
    },
  };
  try {
    const ends: number[] = [];
    const t0 = performance.now();
    const trajectory: Trajectory = await runAgentLoop({
      model,
      sandbox,
      instruction: 'bench',
      jobId: 'bench-traj',
      trajectoryPath: join(tmp, 'out', 'trajectory.json'),
      limits: { maxSteps: STEPS },
      onStep: () => {
        ends.push(performance.now());
      },
    });
    const total = performance.now() - t0;
    const costs = ends.map((t, i) => t - (i === 0 ? t0 : (ends[i - 1] as number)));
    const rewriteStarted = performance.now();
    await writeFile(join(tmp, 'rewrite.json'), JSON.stringify(trajectory, null, 1));
    const rewrite = performance.now() - rewriteStarted;
    // Steps 6–15 (after warm-up) and 140–149 (the last step that runs a tool).
    const first = median(costs.slice(5, 15));
    const last = median(costs.slice(STEPS - 11, STEPS - 1));
    console.log(
      `\n${STEPS}-step trajectory, 20 KB observations, instant model: ${total.toFixed(0)} ms harness time (${trajectory.steps.length} steps, exit ${trajectory.exitReason}) — budget < 3000 ms`,
    );
    console.log(
      `${'  per step, steps 6–15 / 140–149'.padEnd(34)} ${first.toFixed(2)} ms / ${last.toFixed(2)} ms (ratio ${(last / first).toFixed(2)})   target ≈ 1`,
    );
    console.log(
      `${'  rewriting it whole once at 150'.padEnd(34)} ${rewrite.toFixed(2)} ms (what each step cost on top before the journal)`,
    );
  } finally {
    await sandbox.destroy();
    rmSync(tmp, { recursive: true, force: true });
  }
}
