import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/bin/commands/validate-config.js';

// Tests of `frognano-bot validate-config` (src/bin/commands/validate-config.ts), kept with the
// config tests whose parsers it drives.
describe('frognano-bot validate-config', () => {
  let dir: string;
  let out: string;
  let err: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'frognano-validate-'));
    out = '';
    err = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out += String(chunk);
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      err += String(chunk);
      return true;
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  });

  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('prints ok and exits 0 for a valid repository config', async () => {
    const path = file('frognano.yml', 'testCommand: make test\nmaxSteps: 40\n');
    expect(await main([path])).toBe(0);
    expect(out).toBe(`ok: ${path}\n`);
    expect(err).toBe('');
  });

  it('prints the messages and exits 1 for an invalid repository config', async () => {
    const path = file('frognano.yml', 'maxSteps: lots\nimage: x\n');
    expect(await main([path])).toBe(1);
    expect(err).toBe(
      `${path}: maxSteps: must be a whole number from 1 to 150 (got "lots")\n` +
        `${path}: image: is admin-only: the sandbox image is set by the platform admins (sandbox.image in the admin policy); remove it from this file\n`,
    );
    expect(out).toBe('');
  });

  it('accepts the deprecated attempts with a warning naming candidates, in a repository file and a policy', async () => {
    const repo = file('frognano.yml', 'attempts: 2\n');
    expect(await main([repo])).toBe(0);
    expect(out).toBe(`ok: ${repo}\n`);
    expect(err).toBe(
      `warning: ${repo}: attempts: is deprecated, write "candidates: 2" instead (the same meaning: candidates per job, best-of-N)\n`,
    );
    err = '';
    const policy = file('policy.yaml', 'defaults:\n  candidates: 3\n  attempts: 2\n');
    expect(await main([policy, '--policy'])).toBe(0);
    expect(err).toBe(
      `warning: ${policy}: defaults.attempts: is deprecated and ignored: "candidates" is also set and wins (candidates: 3); remove "attempts"\n`,
    );
  });

  it('validates an admin policy with --policy (a valid policy is not a valid repository config)', async () => {
    const path = file(
      'policy.yaml',
      'defaults:\n  enabled: false\nrules:\n  - match: acme/*\n    enabled: true\n',
    );
    expect(await main([path, '--policy'])).toBe(0);
    expect(out).toBe(`ok: ${path}\n`);
    out = '';
    expect(await main([path])).toBe(1);
    expect(err).toContain(
      `${path}: defaults: belongs to the admin policy file, not to a repository configuration (validate a policy with validate-config --policy)`,
    );
  });

  it('checks several files and fails if one fails', async () => {
    const good = file('a.yml', 'label: bot\n');
    const bad = file('b.yml', 'label: [\n');
    expect(await main([good, bad])).toBe(1);
    expect(out).toBe(`ok: ${good}\n`);
    expect(err).toMatch(new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:2:1: invalid YAML: `));
  });

  it('exits 1 for a missing file and 2 for usage errors', async () => {
    expect(await main([join(dir, 'nope.yml')])).toBe(1);
    expect(err).toContain('nope.yml: cannot be read (ENOENT)');
    expect(await main([])).toBe(2);
    expect(await main(['--bogus', 'x'])).toBe(2);
    expect(err).toContain('usage: frognano-bot validate-config');
  });
});
