/**
 * Tool figures at scale (DESIGN.md "Performance budgets": cost follows what a call returns):
 * Read of a 1 MB file (budget ≤ 6 ms, of which the transfer is ≈ 4 ms) through the local
 * bubblewrap sandbox.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { executeTool, readLeafToolSettings } from '../src/leaf/tools/index.js';
import { createLocalSandboxFactory } from '../src/sandbox/local/local-sandbox.js';
import { latencyStats, printLatencyRow } from './latency-stats.js';

/** Milliseconds of each of `runs` sequential calls of `fn`, after `warmup` untimed ones. */
export async function timeRuns(fn: () => Promise<unknown>, runs: number, warmup = 5): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}

/** Print the Read figure; the sandbox and its workspace are removed afterwards. */
export async function benchToolsAtScale(): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'frognano-bench-scale-'));
  const workdir = join(tmp, 'repo');
  mkdirSync(workdir, { recursive: true });
  // 1 MB of ordinary source lines (≈ 26 000 lines of 40 characters).
  const line = 'value = compute(alpha, beta)  # comment\n';
  writeFileSync(join(workdir, 'big.py'), line.repeat(Math.ceil(1_000_000 / line.length)));
  const sandbox = await createLocalSandboxFactory().create({ jobId: 'bench-scale', hostWorkdir: workdir });
  const ctx = { sandbox, settings: readLeafToolSettings({}) };
  try {
    console.log('\nTools at scale, local bubblewrap sandbox:');
    printLatencyRow(
      'Read (1 MB file)',
      latencyStats(await timeRuns(() => executeTool('Read', { file_path: 'big.py' }, ctx), 50)),
      'budget ≤ 6 ms median',
    );
  } finally {
    await sandbox.destroy();
    rmSync(tmp, { recursive: true, force: true });
  }
}
