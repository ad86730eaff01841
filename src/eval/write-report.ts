import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { codeSpan, formatCount, table } from '../text/markdown.js';
import { summarizeResults, type EvalSummary } from './eval-statistics.js';
import { renderReportHtml, type ReportMeta } from './report-html.js';
import { readResults, writePredictions } from './results-store.js';

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/** Render `report.md`: the same figures as report.html, as GitHub-flavoured Markdown. */
export function renderReportMarkdown(s: EvalSummary, meta: ReportMeta): string {
  const [lo, hi] = s.resolvedRateCi95;
  const rates = [
    [
      'resolved (best-of-N choice)',
      `${pct(s.resolvedRate)} (${s.resolved} of ${s.tasks}; 95% CI ${pct(lo)}–${pct(hi)})`,
    ],
    ['pass@1', pct(s.passAt1)],
  ];
  if (s.passAtK && s.passAtK.k > 1) rates.push([`pass@${s.passAtK.k}`, pct(s.passAtK.value)]);
  const reasons = Object.entries(s.exitReasons).sort((a, b) => b[1] - a[1]);
  const dist = (name: string, d: EvalSummary['stepsPerTask'], f: (v: number) => string) => [
    name,
    f(d.median),
    f(d.p90),
    f(d.max),
  ];
  const secs = (v: number): string => v.toFixed(1);
  return [
    `# ${meta.title}`,
    '',
    `${meta.models.map((m) => codeSpan(m)).join(', ') || 'no model'} · ${s.tasks} task${s.tasks === 1 ? '' : 's'} · ${s.candidates} candidate${s.candidates === 1 ? '' : 's'} per task · ${meta.generatedAt}`,
    '',
    table(['figure', 'value'], rates),
    '',
    'The 95% interval is the Wilson score interval. pass@k is the unbiased estimator of Chen et al. 2021, ' +
      '"Evaluating Large Language Models Trained on Code"; the gap between pass@k and the best-of-N choice is what a ' +
      'better choice among the candidates could win.',
    '',
    '## Exit reasons of the candidates',
    '',
    reasons.length === 0
      ? 'No candidate finished.'
      : table(
          ['exit reason', 'candidates'],
          reasons.map(([r, n]) => [codeSpan(r), String(n)]),
          'lr',
        ),
    '',
    '## Per task',
    '',
    table(
      ['', 'median', '90th percentile', 'max'],
      [
        dist('steps', s.stepsPerTask, (v) => formatCount(v)),
        dist('tokens', s.tokensPerTask, (v) => formatCount(v)),
        dist('seconds', s.secondsPerTask, secs),
      ],
      'lrrr',
    ),
    '',
    table(
      ['instance', 'result', 'candidates resolved', 'steps', 'tokens', 'seconds'],
      s.perTask.map((t) => [
        codeSpan(t.instance_id, { table: true }),
        t.resolved ? 'resolved' : 'not resolved',
        `${t.candidatesResolved}/${t.candidates}`,
        formatCount(t.steps),
        formatCount(t.tokens),
        secs(t.seconds),
      ]),
      'llrrrr',
    ),
    '',
  ].join('\n');
}

/** What {@link writeReport} wrote. */
export interface WrittenReport {
  summary: EvalSummary;
  /** Lines of results.jsonl that did not parse (`results.jsonl:<line>`). */
  skipped: string[];
  files: string[];
}

/**
 * (Re)write the report of a results folder from its `results.jsonl`: `predictions.jsonl`,
 * `summary.json`, `report.md`, `report.html`. Idempotent: `eval report --out DIR` and the end of
 * `eval run` call it.
 *
 * @param now the time written in the report (ISO 8601); default the current time.
 */
export async function writeReport(
  outDir: string,
  options: { title?: string; now?: string } = {},
): Promise<WrittenReport> {
  const { results, skipped } = await readResults(outDir);
  const summary = summarizeResults(results);
  const meta: ReportMeta = {
    title: options.title ?? 'FrogNano evaluation',
    models: [...new Set(results.map((r) => r.model))],
    generatedAt: options.now ?? new Date().toISOString(),
  };
  const files = ['predictions.jsonl', 'summary.json', 'report.md', 'report.html'].map((f) => join(outDir, f));
  await writePredictions(outDir, results);
  await writeFile(
    join(outDir, 'summary.json'),
    `${JSON.stringify({ ...summary, models: meta.models }, null, 2)}\n`,
  );
  await writeFile(join(outDir, 'report.md'), renderReportMarkdown(summary, meta));
  await writeFile(join(outDir, 'report.html'), renderReportHtml(summary, meta));
  return { summary, skipped, files };
}
