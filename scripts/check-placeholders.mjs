// Refuses a kustomize overlay that still carries the shipped placeholders (documentation-range
// CIDRs 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 and example.com hosts and registries; the
// rule is src/config/placeholders.ts). Run it before applying:
//   node scripts/check-placeholders.mjs deploy/overlays/production && kubectl apply -k deploy/overlays/production
// or on rendered YAML: kubectl kustomize deploy/overlays/production | node scripts/check-placeholders.mjs -
// An overlay directory is rendered with `kubectl kustomize`. Needs dist/ (npm ci or npm run build).
// Exit code: 0 no placeholder, 1 placeholders found (listed on stderr), 2 usage or render error.
import { execFileSync } from 'node:child_process';
import { Buffer } from 'node:buffer';
import { readFileSync, statSync } from 'node:fs';
import { argv, exit, stderr, stdin, stdout } from 'node:process';
import { parseAllDocuments } from 'yaml';
import { findManifestPlaceholders } from '../dist/config/placeholders.js';

/** All of standard input (a stream: readFileSync(0) fails with EAGAIN on a non-blocking pipe). */
async function readStdin() {
  const chunks = [];
  for await (const chunk of stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

const target = argv[2];
if (!target || argv.length > 3) {
  stderr.write('usage: node scripts/check-placeholders.mjs <overlay directory | rendered.yaml | ->\n');
  exit(2);
}
let text;
try {
  if (target === '-') text = await readStdin();
  else if (statSync(target).isDirectory())
    text = execFileSync('kubectl', ['kustomize', target], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
  else text = readFileSync(target, 'utf8');
} catch (err) {
  stderr.write(`check-placeholders: cannot read or render ${target}: ${err.message}\n`);
  exit(2);
}
const objects = parseAllDocuments(text)
  .map((d) => d.toJS())
  .filter((o) => o && typeof o === 'object');
const found = findManifestPlaceholders(objects);
if (found.length === 0) {
  stdout.write(`check-placeholders: ${target}: no placeholder in ${objects.length} objects\n`);
  exit(0);
}
stderr.write(
  `check-placeholders: ${target} still has ${found.length} placeholder(s); replace them with your own values:\n`,
);
for (const p of found) stderr.write(`  ${p.where}: ${p.value}\n`);
stderr.write('(deploy/README.md, "Edit the configuration")\n');
exit(1);
