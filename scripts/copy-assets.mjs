// Copies every non-TypeScript file of src/ (protocol.json, the in-sandbox agent script, notices)
// to dist/ after `tsc`, which only emits what it compiles; then stamps the build for
// scripts/build-if-stale.mjs.
import { cpSync, writeFileSync } from 'node:fs';

cpSync('src', 'dist', {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});
writeFileSync('dist/.build-stamp', `${new Date().toISOString()}\n`);
