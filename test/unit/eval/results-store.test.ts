import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  appendResult,
  finishedTasks,
  readResults,
  trajectoryPath,
  writePredictions,
  writeTrajectory,
  type TaskResult,
} from '../../../src/eval/results-store.js';
import { sweBenchPredictionSchema } from '../../../src/eval/swe-bench-task.js';

const result = (id: string, patch = 'diff --git a/x b/x\n'): TaskResult => ({
  instance_id: id,
  model: 'microsoft/FrogNano-4B-2609',
  candidates: [
    {
      k: 1,
      exitReason: 'agent',
      steps: 3,
      tokens: { prompt: 1, completion: 2 },
      durationMs: 5,
      resolved: true,
      reason: null,
    },
  ],
  chosen: 1,
  modelPatch: patch,
  durationMs: 10,
});

describe('results store', () => {
  let out: string;
  beforeEach(async () => {
    out = await mkdtemp(join(tmpdir(), 'eval-out-'));
  });
  afterEach(() => rm(out, { recursive: true, force: true }));

  it('knows no finished task in a new folder, then those appended', async () => {
    expect(await finishedTasks(join(out, 'absent'))).toEqual(new Set());
    await appendResult(out, result('a'));
    await appendResult(out, result('b'));
    expect(await finishedTasks(out)).toEqual(new Set(['a', 'b']));
  });

  it('skips a half-written last line (a killed run): that task runs again', async () => {
    await appendResult(out, result('a'));
    await appendFile(join(out, 'results.jsonl'), '{"instance_id":"b","cand');
    const { results, skipped } = await readResults(out);
    expect(results.map((r) => r.instance_id)).toEqual(['a']);
    expect(skipped).toEqual(['results.jsonl:2']);
    expect(await finishedTasks(out)).toEqual(new Set(['a']));
  });

  it('writes predictions.jsonl lines that validate as SWE-bench predictions', async () => {
    await writePredictions(out, [result('a'), result('b', '')]);
    const lines = (await readFile(join(out, 'predictions.jsonl'), 'utf8')).trim().split('\n');
    expect(lines.map((l) => sweBenchPredictionSchema.parse(JSON.parse(l)))).toEqual([
      {
        instance_id: 'a',
        model_name_or_path: 'microsoft/FrogNano-4B-2609',
        model_patch: 'diff --git a/x b/x\n',
      },
      { instance_id: 'b', model_name_or_path: 'microsoft/FrogNano-4B-2609', model_patch: '' },
    ]);
  });

  it('puts trajectories at trajectories/<instance_id>/candidate-<k>.json', async () => {
    const path = await writeTrajectory(out, 'a__b-1', 2, { steps: [] });
    expect(path).toBe(join(out, 'trajectories', 'a__b-1', 'candidate-2.json'));
    expect(trajectoryPath(out, 'a__b-1', 2)).toBe(path);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ steps: [] });
  });
});
