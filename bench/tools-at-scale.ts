/**
 * Tool figures at scale (DESIGN.md "Performance budgets": cost follows what a call returns),
 * through the local bubblewrap sandbox:
 * - Read of a 1 MB file (budget ≤ 6 ms, of which the transfer is ≈ 4 ms);
 * - Glob with a selective pattern (`**` then one literal name) over 110 000 files, beside the
 *   reference-shaped figure: a fresh `python3` process running `glob.glob(..., recursive=True)`
 *   over the same tree, as the reference Leaf tool runner does per call. Target ≥ 5× faster.
 */
import { spawnSync } from 'node:child_process';
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
  // 110 000 files in 110 packages of 1000, and two f0.py files for the selective pattern.
  for (let d = 0; d < 110; d++) {
    const dir = join(workdir, 'tree', `pkg${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 1; f <= 1000; f++) writeFileSync(join(dir, `m${f}.py`), '');
  }
  writeFileSync(join(workdir, 'tree', 'pkg3', 'f0.py'), '');
  writeFileSync(join(workdir, 'tree', 'pkg97', 'f0.py'), '');
  const sandbox = await createLocalSandboxFactory().create({ jobId: 'bench-scale', hostWorkdir: workdir });
  const ctx = { sandbox, settings: readLeafToolSettings({}) };
  try {
    console.log('\nTools at scale, local bubblewrap sandbox:');
    printLatencyRow(
      'Read (1 MB file)',
      latencyStats(await timeRuns(() => executeTool('Read', { file_path: 'big.py' }, ctx), 50)),
      'budget ≤ 6 ms median',
    );
    const pattern = 'tree/**/f0.py';
    const ours = latencyStats(await timeRuns(() => executeTool('Glob', { pattern }, ctx), 20, 2));
    const script = `import glob, os, sys\nroot = sys.argv[1]\nfound = sorted(m for m in glob.glob(os.path.join(root, sys.argv[2]), recursive=True) if os.path.isfile(m))\nprint(len(found))`;
    const reference = latencyStats(
      await timeRuns(
        async () => {
          const r = spawnSync('python3', ['-c', script, workdir, pattern], { encoding: 'utf8' });
          if (r.stdout.trim() !== '2')
            throw new Error(`reference glob found ${r.stdout.trim()} files, not 2`);
        },
        10,
        1,
      ),
    );
    printLatencyRow(`Glob ${pattern} (110 000 files)`, ours, '');
    printLatencyRow('reference: fresh python3 glob.glob', reference, '');
    console.log(
      `${'Glob speed-up over the reference'.padEnd(34)} ${(reference.median / ours.median).toFixed(1)}× (median)   target ≥ 5×`,
    );
  } finally {
    await sandbox.destroy();
    rmSync(tmp, { recursive: true, force: true });
  }
}
