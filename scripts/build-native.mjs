// Compiles native/sandbox-exec.c (the local sandbox's per-command launcher with its libseccomp
// filter) into native/build/sandbox-exec. Run by `npm run build`; needs a C compiler and the
// Debian package libseccomp-dev (scripts/setup.sh installs both). Without them it says so and
// exits 0, so that a build of the Kubernetes-only image still works; the local sandbox driver
// then refuses to start sandboxes and `frognano-bot doctor` names the fix.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';

const out = 'native/build/sandbox-exec';
mkdirSync('native/build', { recursive: true });
const cc = process.env.CC ?? 'cc';
const result = spawnSync(
  cc,
  ['-O2', '-Wall', '-Wextra', '-Werror', '-o', out, 'native/sandbox-exec.c', '-lseccomp'],
  { stdio: 'inherit' },
);
if (result.error || result.status !== 0) {
  console.warn(
    `build-native: could not compile ${out} (${result.error?.message ?? `${cc} exited ${result.status}`}); ` +
      'the local sandbox driver needs it: apt-get install gcc libseccomp-dev, then npm run build:native',
  );
} else {
  console.log(`build-native: built ${out}`);
}
