import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The built CLI as a user runs it: --version, and usage errors (usage on stderr, nothing on stdout,
// exit 2) versus asking for help (usage on stdout, exit 0).

const ROOT = resolve(import.meta.dirname, '../../..');
const CLI = join(ROOT, 'dist/bin/cli.js');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('frognano-bot (the CLI entry point)', () => {
  it('prints its version from package.json with --version and -V', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await cli([flag]);
      expect(r).toEqual({ code: 0, stdout: `frognano-bot ${VERSION}\n`, stderr: '' });
    }
  });

  it('no command: the usage on stderr, exit 2; --help: the usage on stdout, exit 0', async () => {
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain('frognano-bot: no command given');
    expect(none.stderr).toContain('usage: frognano-bot <command> [options]');
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
    expect(help.stdout).toContain('usage: frognano-bot <command> [options]');
    expect(help.stdout).toContain('frognano-bot --version');
  });

  it('an unknown command or option: message and usage on stderr, exit 2', async () => {
    const unknown = await cli(['deploy']);
    expect([unknown.code, unknown.stdout]).toEqual([2, '']);
    expect(unknown.stderr).toContain('unknown command "deploy"');
    for (const command of ['serve', 'worker']) {
      const r = await cli([command, '--bogus']);
      expect([r.code, r.stdout], command).toEqual([2, '']);
      expect(r.stderr, command).toContain("Unknown option '--bogus'");
      expect(r.stderr, command).toContain(`usage: frognano-bot ${command}`);
    }
  });

  it('run with a --model-url that is not http(s) or replay: exit 2, not 3 (no server was tried)', async () => {
    for (const url of ['ftp://127.0.0.1:30000/v1', '127.0.0.1:30000/v1', 'sglang']) {
      const r = await cli(['run', '--repo', '.', '--issue', 'x', '--model-url', url]);
      expect(r.code, url).toBe(2);
      expect(r.stderr, url).toContain(
        `--model-url must be an http:// or https:// URL (e.g. http://127.0.0.1:30000/v1) or replay:<trajectory.json> (got "${url}")`,
      );
    }
  });
});
