import type { EvalSummary } from './eval-statistics.js';

/**
 * `report.html`: one self-contained page (inline CSS and SVG; no script, no external asset), so it
 * can be mailed, attached to a ticket or opened from a results folder on a machine without network.
 */

/** Escape text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const BAR = '#3b7a57';
const MUTED = '#9bb8a6';

interface RateRow {
  label: string;
  value: number;
  ci?: [number, number];
}

/** Horizontal bars of rates on one 0–100% axis; a row with `ci` gets a whisker. */
function rateChart(rows: readonly RateRow[]): string {
  const w = 560;
  const left = 200;
  const plot = w - left - 70;
  const rowH = 30;
  const h = rows.length * rowH + 24;
  const x = (v: number): number => left + v * plot;
  const parts = rows.map((r, i) => {
    const y = i * rowH + 6;
    const whisker = r.ci
      ? `<line x1="${x(r.ci[0])}" x2="${x(r.ci[1])}" y1="${y + 9}" y2="${y + 9}" stroke="#222" stroke-width="1.5"/>` +
        `<line x1="${x(r.ci[0])}" x2="${x(r.ci[0])}" y1="${y + 3}" y2="${y + 15}" stroke="#222"/>` +
        `<line x1="${x(r.ci[1])}" x2="${x(r.ci[1])}" y1="${y + 3}" y2="${y + 15}" stroke="#222"/>`
      : '';
    return (
      `<text x="${left - 8}" y="${y + 13}" text-anchor="end">${escapeHtml(r.label)}</text>` +
      `<rect x="${left}" y="${y}" width="${plot}" height="18" fill="#eef3ef"/>` +
      `<rect x="${left}" y="${y}" width="${(r.value * plot).toFixed(1)}" height="18" fill="${i === 0 ? BAR : MUTED}"/>` +
      whisker +
      `<text x="${x(1) + 6}" y="${y + 13}">${pct(r.value)}</text>`
    );
  });
  const axis = [0, 0.25, 0.5, 0.75, 1]
    .map((v) => `<text x="${x(v)}" y="${h - 4}" text-anchor="middle" class="axis">${v * 100}%</text>`)
    .join('');
  return svg(w, h, parts.join('') + axis, 'Resolved rate, pass@1 and pass@k');
}

/** Horizontal bars of counts (exit reasons). */
function countChart(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  if (entries.length === 0) return '<p class="none">No candidate finished.</p>';
  const w = 560;
  const left = 200;
  const plot = w - left - 60;
  const max = Math.max(...entries.map(([, v]) => v));
  const rows = entries.map(([label, v], i) => {
    const y = i * 26 + 4;
    return (
      `<text x="${left - 8}" y="${y + 13}" text-anchor="end">${escapeHtml(label)}</text>` +
      `<rect x="${left}" y="${y}" width="${((v / max) * plot).toFixed(1)}" height="18" fill="${BAR}"/>` +
      `<text x="${left + (v / max) * plot + 6}" y="${y + 13}">${v}</text>`
    );
  });
  return svg(w, entries.length * 26 + 8, rows.join(''), 'Exit reasons');
}

/** A histogram of per-task values (10 bins at most), resolved tasks darker than the others. */
function histogram(
  values: ReadonlyArray<{ value: number; resolved: boolean }>,
  title: string,
  unit: string,
): string {
  if (values.length === 0) return '<p class="none">No task.</p>';
  const max = Math.max(...values.map((v) => v.value), 1e-9);
  const bins = Math.min(10, Math.max(1, values.length));
  const width = max / bins;
  const counts = Array.from({ length: bins }, () => ({ resolved: 0, other: 0 }));
  for (const v of values) {
    const b = counts[Math.min(bins - 1, Math.floor(v.value / width))];
    if (b) b[v.resolved ? 'resolved' : 'other']++;
  }
  const w = 270;
  const h = 160;
  const plotH = 100;
  const y0 = 20;
  const bw = (w - 20) / bins;
  const top = Math.max(...counts.map((c) => c.resolved + c.other));
  const bars = counts.map((c, i) => {
    const x = 10 + i * bw;
    const hr = (c.resolved / top) * plotH;
    const ho = (c.other / top) * plotH;
    return (
      `<rect x="${x + 1}" y="${y0 + plotH - hr - ho}" width="${bw - 2}" height="${ho}" fill="${MUTED}"/>` +
      `<rect x="${x + 1}" y="${y0 + plotH - hr}" width="${bw - 2}" height="${hr}" fill="${BAR}"/>`
    );
  });
  const fmt = (v: number): string =>
    v >= 1000 ? `${(v / 1000).toFixed(v >= 10_000 ? 0 : 1)}k` : `${Math.round(v)}`;
  const labels =
    `<text x="10" y="12" class="axis">${top} task${top === 1 ? '' : 's'}</text>` +
    `<line x1="10" x2="${w - 10}" y1="${y0}" y2="${y0}" stroke="#dde5df" stroke-dasharray="3 3"/>` +
    `<text x="10" y="${h - 24}" class="axis">0</text>` +
    `<text x="${w - 10}" y="${h - 24}" class="axis" text-anchor="end">${fmt(max)} ${escapeHtml(unit)}</text>` +
    `<text x="${w / 2}" y="${h - 6}" text-anchor="middle">${escapeHtml(title)}</text>`;
  return svg(w, h, bars.join('') + labels, title);
}

function svg(w: number, h: number, body: string, title: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${escapeHtml(title)}"><title>${escapeHtml(title)}</title>${body}</svg>`;
}

const CSS = `body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2420;max-width:980px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #dde5df;padding-bottom:4px}
.sub{color:#5a6a60;margin:0 0 16px}.big{display:flex;gap:28px;flex-wrap:wrap}.big div{min-width:150px}
.big b{display:block;font-size:28px;color:#2c5e42}.big span{color:#5a6a60}
svg{font-size:12px;fill:#1d2420}svg .axis{fill:#6b7a70;font-size:11px}.row{display:flex;flex-wrap:wrap;gap:16px}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;border-bottom:1px solid #eef2ef;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}.yes{color:#2c5e42;font-weight:600}.no{color:#8a3b2f}.none{color:#6b7a70}`;

/** Facts about the run shown in the header. */
export interface ReportMeta {
  title: string;
  /** Models of the results (`model_name_or_path`). */
  models: string[];
  generatedAt: string;
}

/** Render `report.html`. */
export function renderReportHtml(s: EvalSummary, meta: ReportMeta): string {
  const rows: RateRow[] = [
    { label: 'resolved (best-of-N choice)', value: s.resolvedRate, ci: s.resolvedRateCi95 },
  ];
  rows.push({ label: 'pass@1', value: s.passAt1 });
  if (s.passAtK && s.passAtK.k > 1)
    rows.push({ label: `pass@${s.passAtK.k} (any candidate)`, value: s.passAtK.value });
  const perTask = (pick: (t: EvalSummary['perTask'][number]) => number) =>
    s.perTask.map((t) => ({ value: pick(t), resolved: t.resolved }));
  const taskRows = s.perTask
    .map(
      (t) =>
        `<tr><td>${escapeHtml(t.instance_id)}</td><td class="${t.resolved ? 'yes">resolved' : 'no">not resolved'}</td>` +
        `<td class="n">${t.candidatesResolved}/${t.candidates}</td><td class="n">${t.steps}</td>` +
        `<td class="n">${t.tokens.toLocaleString('en-US')}</td><td class="n">${t.seconds.toFixed(1)}</td></tr>`,
    )
    .join('\n');
  const [lo, hi] = s.resolvedRateCi95;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(meta.title)}</title><style>${CSS}</style></head><body>
<h1>${escapeHtml(meta.title)}</h1>
<p class="sub">${escapeHtml(meta.models.join(', ') || 'no model')} · ${s.tasks} task${s.tasks === 1 ? '' : 's'} · ${s.candidates} candidate${s.candidates === 1 ? '' : 's'} per task · ${escapeHtml(meta.generatedAt)}</p>
<div class="big">
<div><b>${pct(s.resolvedRate)}</b><span>resolved (${s.resolved} of ${s.tasks}); 95% CI ${pct(lo)}–${pct(hi)}</span></div>
<div><b>${pct(s.passAt1)}</b><span>pass@1</span></div>
${s.passAtK && s.passAtK.k > 1 ? `<div><b>${pct(s.passAtK.value)}</b><span>pass@${s.passAtK.k}</span></div>` : ''}
</div>
<h2>Rates</h2>
${rateChart(rows)}
<p class="none">Whisker: 95% Wilson interval. pass@k: unbiased estimator of Chen et al. 2021; the gap between pass@k and the best-of-N choice is what a better choice among the candidates could win.</p>
<h2>Exit reasons of the candidates</h2>
${countChart(s.exitReasons)}
<h2>Per task</h2>
<div class="row">${histogram(
    perTask((t) => t.steps),
    'steps per task',
    'steps',
  )}${histogram(
    perTask((t) => t.tokens),
    'tokens per task',
    'tokens',
  )}${histogram(
    perTask((t) => t.seconds),
    'time per task',
    's',
  )}</div>
<p class="none">Dark: resolved tasks; light: the others. Median steps ${s.stepsPerTask.median}, tokens ${Math.round(s.tokensPerTask.median).toLocaleString('en-US')}, time ${s.secondsPerTask.median.toFixed(1)} s.</p>
<table><thead><tr><th>instance</th><th>result</th><th class="n">candidates resolved</th><th class="n">steps</th><th class="n">tokens</th><th class="n">seconds</th></tr></thead>
<tbody>
${taskRows}
</tbody></table>
</body></html>
`;
}
