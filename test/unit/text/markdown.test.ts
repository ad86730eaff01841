import { marked } from 'marked';
import { describe, expect, it } from 'vitest';
import {
  codeSpan,
  fence,
  formatCount,
  formatDuration,
  quoteUntrusted,
  table,
  untrustedInline,
} from '../../../src/text/markdown.js';

/** Rendered HTML, as a GFM renderer (marked) makes it. */
const html = (md: string) => marked.parse(md, { gfm: true, async: false });

describe('formatDuration', () => {
  it('writes one format for every size', () => {
    expect(formatDuration(420)).toBe('0.4 s');
    expect(formatDuration(1_900)).toBe('1.9 s');
    expect(formatDuration(2_000)).toBe('2 s');
    expect(formatDuration(9_960)).toBe('10 s');
    expect(formatDuration(45_000)).toBe('45 s');
    expect(formatDuration(185_000)).toBe('3 min 5 s');
    expect(formatDuration(180_000)).toBe('3 min');
    expect(formatDuration(3_720_000)).toBe('1 h 2 min');
    expect(formatDuration(7_200_000)).toBe('2 h');
    expect(formatDuration(-5)).toBe('0 s');
  });
});

describe('formatCount', () => {
  it('separates thousands', () => {
    expect(formatCount(12_345)).toBe('12,345');
    expect(formatCount(608)).toBe('608');
  });
});

describe('fence', () => {
  it('uses three backticks unless the text has a longer run', () => {
    expect(fence('x')).toBe('```text\nx\n```');
    expect(fence('a ```` b', 'diff')).toBe('`````diff\na ```` b\n`````');
  });
});

describe('codeSpan', () => {
  it('keeps untrusted text on one line inside one span, pipes escaped in tables', () => {
    expect(codeSpan('a`b\nc')).toBe("`a'b c`");
    expect(codeSpan('x'.repeat(10), { max: 5 })).toBe('`xxxx…`');
    expect(html(table(['Test', 'n'], [[codeSpan('t[a|b]', { table: true }), '1']]))).toContain(
      '<td><code>t[a|b]</code></td>',
    );
  });
});

describe('quoteUntrusted', () => {
  it('renders model text as quoted prose that wraps, with its line breaks and paragraphs', () => {
    const out = html(quoteUntrusted('Fixed `add()` in calc.py.\nIt now adds.\n\nAll 3 tests pass.'));
    expect(out).toBe(
      '<blockquote>\n<p>Fixed <code>add()</code> in calc.py.<br>It now adds.</p>\n<p>All 3 tests pass.</p>\n</blockquote>\n',
    );
  });

  it('lets nothing in it act: no mention, reference, link, image, HTML, heading, list or table', () => {
    const hostile = [
      '# Heading @alice fixes #12',
      '- [click](https://evil.example/x) ![img](http://evil.example/p.png) <img src=x onerror=alert(1)>',
      '1. see www.evil.example and <!-- hidden -->',
      '| a | b |',
      '|---|---|',
      '> nested **bold** _em_ ~~del~~',
    ].join('\n');
    const out = html(quoteUntrusted(hostile));
    expect(out.match(/<(?!\/?(blockquote|p|br)>)[a-z!]/g)).toBeNull();
    expect(out).not.toMatch(/@alice|#12|https?:\/\/|www\./);
    expect(out).toContain('@\u200balice');
    expect(out).toContain('#\u200b12');
  });

  it('keeps code spans verbatim, where GitHub acts on nothing', () => {
    expect(html(quoteUntrusted('run `npm test -- --grep @slow`'))).toContain(
      '<code>npm test -- --grep @slow</code>',
    );
  });
});

describe('untrustedInline', () => {
  it('puts several lines on one and escapes them', () => {
    expect(untrustedInline('a\nb *c*')).toBe('a b \\*c\\*');
  });
});

describe('table', () => {
  it('has a header row with text and right-aligned number columns', () => {
    expect(table(['Result', 'Count'], [['Fixed', '1']], 'lr')).toBe(
      '| Result | Count |\n|---|---:|\n| Fixed | 1 |',
    );
  });
});
