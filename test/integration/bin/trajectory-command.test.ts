import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isAppError } from '../../../src/app-error.js';
import { main } from '../../../src/bin/commands/trajectory.js';
import type { Trajectory } from '../../../src/leaf/trajectory.js';
import { createSilentLogger } from '../../../src/observability/logger.js';
import { createTrajectoryJournal, journalPathFor } from '../../../src/observability/trajectory-journal.js';
import { createTrajectoryStore } from '../../../src/observability/trajectory-store.js';

/** `frognano-bot trajectory` on a store with a best-of-N job and a single-attempt job. */

let dir: string;

function trajectory(jobId: string, finalMessage: string): Trajectory {
  return {
    version: 1,
    jobId,
    model: `model-of-${finalMessage.replace(/ /g, '-')}`,
    startedAt: '2026-01-01T00:00:00.000Z',
    messages: [{ role: 'assistant', content: finalMessage }],
    tools: [],
    steps: [],
    exitReason: 'agent',
    error: null,
    finalMessage,
    contextTokens: 0,
    totalTokens: { prompt: 0, completion: 0 },
    elapsedMs: 0,
    patch: '',
  };
}

async function run(args: string[]): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.push(String(chunk));
    return true;
  });
  try {
    return { code: await main([...args, '--dir', dir]), out: out.join('') };
  } finally {
    spy.mockRestore();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frognano-trajectories-'));
  const store = createTrajectoryStore({ dir });
  for (const n of [1, 2])
    await store.saveJson('best', `attempt-${n}`, trajectory('best', `answer of attempt ${n}`));
  await store.saveJson('best', 'trajectory', trajectory('best', 'answer of attempt 2'));
  await store.saveJson('best', 'attempts', {
    chosen: 2,
    reason: 'Attempt 2 was chosen: it fixes 1 test.',
    rows: [
      { attempt: 1, chosen: false, result: '0 fixed' },
      { attempt: 2, chosen: true, result: '1 fixed' },
    ],
  });
  await store.saveJson('none', 'attempt-1', trajectory('none', 'refused one'));
  // A job stored after the rename: candidate-<n>.json and candidates.json.
  for (const n of [1, 2])
    await store.saveJson('new', `candidate-${n}`, trajectory('new', `answer of candidate ${n}`));
  await store.saveJson('new', 'candidates', {
    chosen: 1,
    reason: 'Attempt 1 was chosen: it fixes 1 test.',
    rows: [
      { attempt: 1, chosen: true, result: '1 fixed' },
      { attempt: 2, chosen: false, result: '0 fixed' },
    ],
  });
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('frognano-bot trajectory', () => {
  it('prints a running or crashed job from its journal, by job id and by .jsonl path', async () => {
    const store = createTrajectoryStore({ dir });
    const path = store.trajectoryPath('crashed');
    const live: Trajectory = {
      ...trajectory('crashed', 'unused'),
      messages: [
        { role: 'system', content: 'system' },
        { role: 'user', content: 'fix it' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'Bash', arguments: '{"command":"pytest"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: '1 failed' },
      ],
      steps: [
        {
          index: 1,
          startedAt: '2026-01-01T00:00:00.000Z',
          llmMs: 5,
          toolMs: 7,
          finishReason: 'tool_calls',
          usage: null,
          toolCalls: [
            {
              id: 'c1',
              name: 'Bash',
              arguments: '{"command":"pytest"}',
              observation: '1 failed',
              durationMs: 7,
            },
          ],
        },
      ],
      exitReason: null,
      finalMessage: null,
      patch: null,
    };
    await createTrajectoryJournal(path, createSilentLogger()).append(live);
    const byId = await run(['crashed', '--json']);
    expect(byId.code).toBe(0);
    expect(JSON.parse(byId.out)).toEqual(live);
    const byPath = await run([journalPathFor(path)]);
    expect(byPath.code).toBe(0);
    expect(byPath.out).toContain('1 failed');
  });

  it('prints the chosen attempt by default, with the list of attempts', async () => {
    const { code, out } = await run(['best']);
    expect(code).toBe(0);
    expect(out).toContain('Candidate 2 of 2 (chosen). Attempt 2 was chosen: it fixes 1 test.');
    expect(out).toContain('  candidate 1: 0 fixed');
    expect(out).toContain('model model-of-answer-of-attempt-2');
  });

  it('prints another attempt with --attempt N', async () => {
    const { code, out } = await run(['best', '--attempt', '1']);
    expect(code).toBe(0);
    expect(out).toContain('Candidate 1 of 2. Attempt 2 was chosen');
    expect(out).toContain('model model-of-answer-of-attempt-1');
  });

  it('names the stored attempts when the one asked for, or a chosen one, is missing', async () => {
    await expect(run(['best', '--attempt', '3'])).rejects.toSatisfy(
      (err) => isAppError(err, 'TRAJECTORY_NOT_FOUND') && err.message.includes('stored candidates: 1, 2'),
    );
    await expect(run(['none'])).rejects.toSatisfy(
      (err) => isAppError(err, 'TRAJECTORY_NOT_FOUND') && err.message.includes('--candidate N (stored: 1)'),
    );
  });

  it('prints a candidate of a job stored with the new names, with --candidate N', async () => {
    const { code, out } = await run(['new', '--candidate', '2']);
    expect(code).toBe(0);
    expect(out).toContain('Candidate 2 of 2. Attempt 1 was chosen');
    expect(out).toContain('  candidate 1 (chosen): 1 fixed');
    expect(out).toContain('model model-of-answer-of-candidate-2');
  });

  it('refuses --attempt with a file path', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect((await run(['x.json', '--attempt', '1'])).code).toBe(2);
    } finally {
      err.mockRestore();
    }
  });
});
