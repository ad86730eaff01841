// Runs `npm run build` unless dist/ is already newer than everything it is built from, so that
// `npm ci && npm test` builds once (npm ci's `prepare` builds) while a test run after editing src/
// still builds first. The stamp is written by scripts/copy-assets.mjs, the last step of a build.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { stdout } from 'node:process';

const STAMP = 'dist/.build-stamp';
const INPUTS = [
  'src',
  'tsconfig.json',
  'tsconfig.build.json',
  'package-lock.json',
  'scripts/copy-assets.mjs',
  'native/sandbox-exec.c',
  'scripts/build-native.mjs',
];

/** Newest modification time (ms) of a file or of every file under a directory. */
function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs; // a deleted or renamed file changes its directory's mtime
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

let built = 0;
try {
  built = statSync(STAMP).mtimeMs;
} catch {
  // no stamp: never built here
}
const sources = Math.max(...INPUTS.map(newestMtime));
if (sources > built) {
  execFileSync('npm', ['run', 'build'], { stdio: 'inherit' });
} else {
  stdout.write('dist/ is up to date with src/ (scripts/build-if-stale.mjs): not rebuilding\n');
}
