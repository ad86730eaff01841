import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_DOCS } from '../../src/config/env.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  scripts: Record<string, string>;
};
const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');

function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README.md has no "## ${title}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

describe('README', () => {
  it('starts with the two commands of a fresh machine: the main job and the tests', () => {
    const firstLines = readme.split('\n').slice(0, 5).join('\n');
    expect(firstLines).toContain('npm run demo');
    expect(firstLines).toContain('npm test');
    expect(pkg.scripts.demo).toContain('run --repo examples/temperature/repo');
    // CI runs the README's test command.
    expect(ci).toMatch(/^npm test$/m);
  });

  it('documents every environment variable that env.ts reads, and no other', () => {
    const documented = [...section('Environment variables').matchAll(/^\| `([A-Z0-9_]+)`/gm)].map(
      (m) => m[1],
    );
    expect(documented.sort()).toEqual(ENV_DOCS.map((d) => d.name).sort());
  });
});
