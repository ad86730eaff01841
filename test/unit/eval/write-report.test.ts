import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { main as evalCommand } from '../../../src/bin/commands/eval.js';
import { appendResult, type TaskResult } from '../../../src/eval/results-store.js';
import { writeReport } from '../../../src/eval/write-report.js';

const cand = (k: number, resolved: boolean, exitReason = 'agent') => ({
  k,
  exitReason,
  steps: 12,
  tokens: { prompt: 900, completion: 100 },
  durationMs: 30_000,
  resolved,
  reason: resolved ? null : '1 FAIL_TO_PASS test(s) fail: t',
});
const results: TaskResult[] = [
  {
    instance_id: 'acme__calc-1',
    model: 'frognano',
    candidates: [cand(1, true), cand(2, false)],
    chosen: 1,
    modelPatch: 'p1',
    durationMs: 60_000,
  },
  {
    instance_id: 'acme__calc-2',
    model: 'frognano',
    candidates: [cand(1, false, 'max_steps'), cand(2, true)],
    chosen: 1,
    modelPatch: 'p2',
    durationMs: 90_000,
  },
  {
    instance_id: 'acme__calc-3',
    model: 'frognano',
    candidates: [cand(1, false), cand(2, false)],
    chosen: null,
    modelPatch: '',
    durationMs: 30_000,
  },
];

describe('the evaluation report', () => {
  let out: string;
  beforeEach(async () => {
    out = await mkdtemp(join(tmpdir(), 'eval-report-'));
    for (const r of results) await appendResult(out, r);
  });
  afterEach(() => rm(out, { recursive: true, force: true }));

  it('writes the same figures to summary.json, report.md and report.html', async () => {
    const { summary } = await writeReport(out, { now: '2026-12-01T12:00:00Z' });
    const json = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8'));
    expect(json).toMatchObject({
      tasks: 3,
      resolved: 1,
      candidates: 2,
      passAt1: 1 / 3,
      passAtK: { k: 2, value: 2 / 3 },
    });
    expect(json.models).toEqual(['frognano']);
    const md = await readFile(join(out, 'report.md'), 'utf8');
    expect(md).toContain('| resolved (best-of-N choice) | 33.3% (1 of 3; 95% CI 6.1%–79.2%) |');
    expect(md).toContain('| pass@1 | 33.3% |');
    expect(md).toContain('| pass@2 | 66.7% |');
    expect(md).toContain('| `max_steps` | 1 |');
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toContain('33.3%');
    expect(html).toContain('pass@2');
    expect(summary.resolvedRateCi95[0]).toBeCloseTo(0.0615, 4);
  });

  it('makes a self-contained page: no script, no external asset, untrusted text escaped', async () => {
    await writeReport(out, { title: 'FrogNano <b>on</b> "calc"' });
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).not.toMatch(/<script|<link|<img|@import|url\(/i);
    expect(html.match(/(?:src|href)=/g)).toBeNull();
    expect(html).toContain('<h1>FrogNano &#60;b&#62;on&#60;/b&#62; &#34;calc&#34;</h1>');
    expect(html).not.toContain('<b>on');
    expect((html.match(/<svg /g) ?? []).length).toBe(5);
  });

  it('eval report --out DIR re-renders the report and rewrites predictions.jsonl', async () => {
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(await evalCommand(['report', '--out', out])).toBe(0);
      expect(String(stdout.mock.calls[0]?.[0])).toMatch(
        /^1 of 3 tasks resolved \(33\.3%, 95% CI 6\.1%–79\.2%\); pass@1 33\.3%, pass@2 66\.7%\n/,
      );
    } finally {
      stdout.mockRestore();
    }
    const predictions = (await readFile(join(out, 'predictions.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(predictions.map((p) => [p.instance_id, p.model_patch])).toEqual([
      ['acme__calc-1', 'p1'],
      ['acme__calc-2', 'p2'],
      ['acme__calc-3', ''],
    ]);
  });

  it('eval report refuses a folder without results, and eval without a known subcommand', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await evalCommand(['report', '--out', join(out, 'empty')])).toBe(1);
      expect(String(stderr.mock.calls[0]?.[0])).toContain('has no results.jsonl');
      expect(await evalCommand(['report'])).toBe(2);
      expect(await evalCommand(['frobnicate'])).toBe(2);
      expect(String(stderr.mock.calls.at(-1)?.[0])).toContain('unknown subcommand "frobnicate"');
      // `eval run` exists now: without --model-url it is a usage error.
      expect(await evalCommand(['run', 'tasks.jsonl', '--out', join(out, 'x'), '--repos', out])).toBe(2);
      expect(String(stderr.mock.calls.at(-1)?.[0])).toContain('--model-url is required');
    } finally {
      stderr.mockRestore();
    }
  });
});
