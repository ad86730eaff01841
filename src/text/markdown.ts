/**
 * One way to write what people read — the status comment, the pull request body, the agent's
 * instruction: durations, counts, fenced blocks, code spans and untrusted prose. GitHub-flavoured
 * Markdown (https://github.github.com/gfm/). No configuration, no I/O: anything may import it.
 */

/**
 * A duration for people, from milliseconds: `0.4 s`, `4.2 s` (one decimal below 10 s), `42 s`,
 * `3 min 5 s`, `2 h 4 min`. Negative values count as 0.
 */
export function formatDuration(ms: number): string {
  const safe = Math.max(0, Number.isFinite(ms) ? ms : 0);
  if (safe < 9_950) return `${Number((safe / 1000).toFixed(1))} s`;
  const total = Math.round(safe / 1000);
  if (total < 60) return `${total} s`;
  const min = Math.floor(total / 60);
  if (min < 60) return total % 60 === 0 ? `${min} min` : `${min} min ${total % 60} s`;
  const h = Math.floor(min / 60);
  return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
}

/** A whole number with thousands separators: `12,345` (en-US, as GitHub's own UI writes them). */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** `1 test`, `2 tests` (an `s` plural; pass `plural` for others). */
export function pluralize(n: number, noun: string, plural = `${noun}s`): string {
  return `${formatCount(n)} ${n === 1 ? noun : plural}`;
}

/**
 * A fenced code block whose fence (at least three backticks) is longer than any backtick run in
 * `text`, so the text cannot close it. `info` is the info string (`text`, `diff`, or `''`).
 */
export function fence(text: string, info = 'text'): string {
  const longest = Math.max(0, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const ticks = '`'.repeat(Math.max(3, longest + 1));
  return `${ticks}${info}\n${text}\n${ticks}`;
}

/**
 * A one-line code span of untrusted text: backticks become `'`, line breaks spaces, cut to `max`
 * characters (default 300) with `…`. With `table: true`, pipes are escaped (GFM splits table cells
 * on `|` even inside code spans).
 */
export function codeSpan(text: string, options: { max?: number; table?: boolean } = {}): string {
  const max = options.max ?? 300;
  let t = text.replace(/`/g, "'").replace(/\r?\n+/g, ' ');
  if (t.length > max) t = `${t.slice(0, max - 1)}…`;
  if (options.table) t = t.replace(/\|/g, '\\|');
  return `\`${t}\``;
}

/** Characters Markdown or HTML would act on anywhere in a line of prose. */
const INLINE_PUNCTUATION = /[\\*_[\]!|~]/g;

/**
 * Untrusted text (model output, error messages) as plain prose on one line: Markdown and HTML
 * escaped, `@mentions` and `#123` references defused with a zero-width space so nobody is pinged and
 * no issue is linked or closed, bare URLs not turned into links; cut to `max` characters (default
 * 2 000). Code spans the text contains stay code spans (GitHub acts on nothing inside them).
 */
export function untrustedInline(text: string, max = 2000): string {
  return proseLine(
    text
      .replace(/\r?\n+/g, ' ')
      .trim()
      .slice(0, max),
  );
}

/**
 * Untrusted multi-line text as a block quote of prose, so long lines wrap instead of scrolling off
 * a code block: each line escaped as by {@link untrustedInline} (so no heading, list, table, link,
 * image or HTML comes out of it), line breaks kept, paragraphs kept. Callers say whose text it is in
 * the line before: a quote alone does not say "model output".
 */
export function quoteUntrusted(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').replace(/\s+$/, '').split('\n');
  return lines
    .map((line, i) => {
      if (!line.trim()) return '>';
      // A backslash at the end is a hard line break (CommonMark 6.7) unless a paragraph ends here.
      const next = lines[i + 1];
      return `> ${proseLine(line.trim())}${next !== undefined && next.trim() ? '\\' : ''}`;
    })
    .join('\n');
}

/** One line of untrusted prose: code spans kept, everything else escaped and defused. */
function proseLine(line: string): string {
  const parts: string[] = [];
  let last = 0;
  // A code span: a run of backticks, then anything up to the same run (CommonMark 6.1).
  for (const m of line.matchAll(/(`+)(?!`)(.+?)(?<!`)\1(?!`)/g)) {
    parts.push(escapeProse(line.slice(last, m.index)), `${m[1]}${m[2]}${m[1]}`);
    last = m.index + m[0].length;
  }
  parts.push(escapeProse(line.slice(last)));
  // What would start a block at the beginning of a line: heading, list item, setext underline.
  return parts.join('').replace(/^([#+=-]|\d+(?=[.)]))/, (m) => (/\d/.test(m) ? `${m}\\` : `\\${m}`));
}

function escapeProse(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(INLINE_PUNCTUATION, (c) => `\\${c}`)
    .replace(/`/g, '\\`')
    .replace(/@(?=[A-Za-z0-9])/g, '@\u200b')
    .replace(/#(?=\d)/g, '#\u200b')
    .replace(/\b(https?|ftp):\/\//gi, '$1:\u200b//')
    .replace(/\bwww\./gi, 'www\u200b.');
}

/**
 * A GFM table. Every header cell has text (an empty header row renders as a blank bar); `align`
 * per column: `l` (default) or `r` (numbers). Cells are inserted as given: escape untrusted ones.
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[], align = ''): string {
  const rule = header.map((_, i) => (align[i] === 'r' ? '---:' : '---'));
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), `|${rule.join('|')}|`, ...rows.map(line)].join('\n');
}
