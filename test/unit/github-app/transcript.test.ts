import { describe, expect, it } from 'vitest';
import {
  appendTranscriptRound,
  MAX_CHECK_RUN_TEXT_CHARS,
  renderTranscriptRound,
  type TranscriptSource,
} from '../../../src/github-app/transcript.js';

/** A trajectory of `n` steps alternating Read and Bash, ending with an answer. */
function trajectory(n: number, jobId = 'job-1'): TranscriptSource {
  const steps: TranscriptSource['steps'][number][] = [];
  for (let i = 1; i < n; i++) {
    steps.push({
      index: i,
      toolCalls: [
        i % 2
          ? {
              name: 'Read',
              arguments: JSON.stringify({ file_path: `src/file-${i}.py` }),
              observation: `src/file-${i}.py\n1. a\n2. b`,
            }
          : {
              name: 'Bash',
              arguments: JSON.stringify({ command: `pytest -q tests/test_${i}.py\necho done` }),
              observation: `Exit code: ${i % 4 === 0 ? 1 : 0}\nSTDOUT:\n${'.'.repeat(3)}   [100%]\n3 passed\nSTDERR:\n`,
            },
      ],
    });
  }
  steps.push({ index: n, toolCalls: [] });
  return {
    jobId,
    steps,
    finalMessage: 'Fixed it. See @bob and #12.',
    exitReason: 'agent',
    error: null,
    totalTokens: { prompt: 12_345, completion: 678 },
    elapsedMs: 185_000,
  };
}

describe('renderTranscriptRound', () => {
  it('renders one row per step with tool, short arguments, short observation and the Bash exit code', () => {
    const text = renderTranscriptRound(trajectory(5), { round: 1, note: 'Asked for by @alice.' });
    expect(text.split('\n').slice(0, 4)).toEqual([
      '### Round 1 — job `job-1`',
      '',
      'Asked for by @alice.',
      '',
    ]);
    expect(text).toContain('| 1 | `Read` | `src/file-1.py` | `2 lines` |  |');
    expect(text).toContain(
      '| 2 | `Bash` | `pytest -q tests/test_2.py … (+1 line)` | `... [100%] … (+1 line)` | 0 |',
    );
    expect(text).toContain(
      '| 4 | `Bash` | `pytest -q tests/test_4.py … (+1 line)` | `... [100%] … (+1 line)` | 1 |',
    );
    expect(text).toContain('| 5 | — |  | _(no tool call: answered)_ |  |');
    // The final message is quoted with mentions and references defused.
    expect(text).toContain('> Fixed it. See @\u200bbob and #\u200b12.');
    expect(text).toContain('| `agent` | 5 | 12,345 / 678 | 3 min 5 s |');
    expect(text).toContain('`frognano-bot trajectory job-1`');
  });

  it('cuts long arguments and observations to one line with "…"', () => {
    const t = trajectory(2);
    t.steps[0]!.toolCalls[0]!.arguments = JSON.stringify({ command: `echo ${'x'.repeat(200)}` });
    t.steps[0]!.toolCalls[0]!.name = 'Bash';
    t.steps[0]!.toolCalls[0]!.observation = `Exit code: 0\nSTDOUT:\n${'y'.repeat(300)}\nSTDERR:\n`;
    const row = renderTranscriptRound(t, { round: 1 })
      .split('\n')
      .find((l) => l.startsWith('| 1 |'))!;
    const [, , args, observation] = row.split(' | ');
    expect(args).toHaveLength(80 + 2);
    expect(args!.endsWith('…`')).toBe(true);
    expect(observation).toHaveLength(120 + 2);
  });

  it('redacts anything shaped like a secret', () => {
    const token = `ghp_${'a'.repeat(36)}`;
    const t = trajectory(2);
    t.steps[0]!.toolCalls[0]!.observation = `x\nTOKEN=${token}`;
    t.steps[0]!.toolCalls[0]!.arguments = JSON.stringify({ file_path: `/tmp/${token}` });
    t.finalMessage = `the key is ${token}`;
    const text = renderTranscriptRound(t, { round: 1 });
    expect(text).not.toContain(token);
    expect(text).toContain('[redacted: GitHub token]');
  });

  it('cuts steps from the middle with a note when the section is over the limit', () => {
    const t = trajectory(1000, 'job-big');
    const full = renderTranscriptRound(t, { round: 1, maxChars: 10_000_000 });
    expect(full.length).toBeGreaterThan(MAX_CHECK_RUN_TEXT_CHARS);
    const text = renderTranscriptRound(t, { round: 1 });
    expect(text.length).toBeLessThanOrEqual(MAX_CHECK_RUN_TEXT_CHARS);
    const rows = text.split('\n').filter((l) => /^\| \d+ \| /.test(l));
    const note = text.split('\n').find((l) => l.startsWith('| … |'))!;
    const cut = Number(/\*(\d+) steps cut/.exec(note)![1]);
    expect(rows.length + cut).toBe(1000);
    // First and last steps stay; the note names the command with the full trajectory.
    expect(rows[0]).toMatch(/^\| 1 \| /);
    expect(rows.at(-1)).toMatch(/^\| 1000 \| /);
    expect(note).toContain(
      "to stay within GitHub's limit; the full trajectory: `frognano-bot trajectory job-big`",
    );
    // The note sits where the steps are missing.
    const at = text.split('\n').indexOf(note);
    const before = Number(/^\| (\d+) /.exec(text.split('\n')[at - 1]!)![1]);
    const after = Number(/^\| (\d+) /.exec(text.split('\n')[at + 1]!)![1]);
    expect(after - before - 1).toBe(cut);
    // Everything after the table is kept.
    expect(text).toContain('| `agent` | 1,000 | 12,345 / 678 | 3 min 5 s |');
  });
});

describe('appendTranscriptRound', () => {
  it('keeps earlier rounds and adds the new one', () => {
    const one = renderTranscriptRound(trajectory(3, 'job-1'), { round: 1 });
    const two = renderTranscriptRound(trajectory(3, 'job-2'), { round: 2 });
    expect(appendTranscriptRound(one, two)).toBe(`${one}\n\n${two}`);
    expect(appendTranscriptRound(null, one)).toBe(one);
  });

  it('cuts the oldest round first when the whole is over the limit', () => {
    const one = renderTranscriptRound(trajectory(500, 'job-1'), { round: 1 });
    const two = renderTranscriptRound(trajectory(500, 'job-2'), { round: 2 });
    expect(one.length + two.length).toBeGreaterThan(MAX_CHECK_RUN_TEXT_CHARS);
    const text = appendTranscriptRound(one, two);
    expect(text.length).toBeLessThanOrEqual(MAX_CHECK_RUN_TEXT_CHARS);
    const [first, second] = text.split(/\n\n(?=### Round 2)/);
    expect(second).toBe(two);
    expect(first).toContain('steps cut');
    expect(first).toContain('### Round 1 — job `job-1`');
    // A third round cuts round 1 further, merging its note, before touching round 2.
    const three = renderTranscriptRound(trajectory(60, 'job-3'), { round: 3 });
    const again = appendTranscriptRound(text, three);
    expect(again.length).toBeLessThanOrEqual(MAX_CHECK_RUN_TEXT_CHARS);
    const notes = again.split('\n').filter((l) => l.startsWith('| … |'));
    expect(notes.length).toBeGreaterThanOrEqual(1);
    expect(again.endsWith(three)).toBe(true);
    const round1 = again.split(/\n\n(?=### Round 2)/)[0]!;
    const rows1 = round1.split('\n').filter((l) => /^\| \d+ \| /.test(l)).length;
    const cut1 = Number(/\*(\d+) steps cut/.exec(round1)![1]);
    expect(rows1 + cut1).toBe(500);
  });
});
