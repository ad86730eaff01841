/**
 * Glob over a tree larger than any listing cap (110 000 files), in a real local (bubblewrap)
 * sandbox, against real Python's `glob.glob(..., recursive=True)` on the same tree.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeTool, readLeafToolSettings } from '../../../src/leaf/tools/index.js';
import { createLocalSandboxFactory } from '../../../src/sandbox/local/local-sandbox.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';
import { runPython } from '../../unit/leaf/tools/run-python.js';

const FILES_PER_PACKAGE = 55_000;
const TOTAL = 2 * FILES_PER_PACKAGE + 2;

let base = '';
let ws = '';
let sandbox: Sandbox | undefined;

/** What the reference's Glob shows for `pattern`: Python's glob, files only, sorted, capped. */
function reference(pattern: string, limit = readLeafToolSettings({}).globLimit): string {
  const matches = runPython<string[]>(
    `import glob, os
root = data["root"]
found = [m for m in glob.glob(os.path.join(root, data["pattern"]), recursive=True) if os.path.isfile(m)]
result = sorted(os.path.relpath(m, root) for m in found)`,
    { root: ws, pattern },
  );
  if (matches.length === 0) return 'No files matched.';
  const shown = matches.slice(0, limit).join('\n');
  return matches.length > limit ? `${shown}\n... ${matches.length - limit} more files` : shown;
}

function glob(pattern: string): Promise<string> {
  if (!sandbox) throw new Error('the local sandbox did not start');
  return executeTool('Glob', { pattern }, { sandbox, settings: readLeafToolSettings({}) });
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'leaf-glob-scale-'));
  ws = join(base, 'repo');
  // Two packages of 55 000 files, each with deep/f0.py below it. A walk stops at a cap only after
  // the first package's files, so whichever package comes second loses its f0.py under any cap
  // of 100 000 entries, in any directory order.
  for (const pkg of ['a', 'b']) {
    mkdirSync(join(ws, pkg, 'deep'), { recursive: true });
    for (let f = 0; f < FILES_PER_PACKAGE; f++) writeFileSync(join(ws, pkg, `g${f}.py`), '');
    writeFileSync(join(ws, pkg, 'deep', 'f0.py'), '');
  }
  sandbox = await createLocalSandboxFactory().create({ jobId: 'leaf-glob-scale', hostWorkdir: ws });
}, 120_000);

afterAll(async () => {
  await sandbox?.destroy();
  if (base) rmSync(base, { recursive: true, force: true });
});

describe('Glob over 110 000 files', () => {
  it('finds both f0.py files with **/f0.py, as the reference does', async () => {
    const expected = reference('**/f0.py');
    expect(expected).toBe('a/deep/f0.py\nb/deep/f0.py');
    expect(await glob('**/f0.py')).toBe(expected);
  });

  it('counts every match of a broad pattern past 100 000 files', async () => {
    const out = await glob('**/*.py');
    expect(out.split('\n').at(-1)).toBe(`... ${TOTAL - readLeafToolSettings({}).globLimit} more files`);
    expect(out).toBe(reference('**/*.py'));
  });

  it('matches the reference for patterns that prune and for a literal path', async () => {
    for (const pattern of [
      'pkg/m10?/g99?.py',
      'pkg/*/deep/*.py',
      'pkg/m109/**/f0.py',
      'pkg/m005/g7.py',
      '*.py',
    ]) {
      expect(await glob(pattern), pattern).toBe(reference(pattern));
    }
  });
});
