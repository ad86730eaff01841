// Copies every non-TypeScript file of src/ (protocol.json, the in-sandbox agent script, notices)
// to dist/ after `tsc`, which only emits what it compiles, records the commit the build is made
// from in dist/build-info.json (read by src/observability/build-info.ts for `frognano_build_info`):
// FROGNANO_COMMIT if set (image builds without .git), else `git rev-parse`; then stamps the build
// for scripts/build-if-stale.mjs.
import { execFileSync } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import process from 'node:process';

cpSync('src', 'dist', {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});

function buildCommit() {
  const fromEnv = process.env.FROGNANO_COMMIT?.trim();
  if (fromEnv) return fromEnv;
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null; // not a git checkout: the metric says `unknown`
  }
}

const commit = buildCommit();
writeFileSync('dist/build-info.json', `${JSON.stringify(commit ? { commit } : {})}\n`);
writeFileSync('dist/.build-stamp', `${new Date().toISOString()}\n`);
