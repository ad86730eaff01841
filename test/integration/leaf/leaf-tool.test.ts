/**
 * `frognano-bot leaf-tool`: one tool call from stdin, the observation on stdout byte for byte, in a
 * real local (bubblewrap) sandbox. `main()` is driven with injected streams; one run goes through the
 * CLI entry point in a child process, as the black-box parity checker uses it.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../../src/bin/commands/leaf-tool.js';
import {
  clearDirectory,
  layoutWorkspace,
  loadParityCases,
  substituteWorkspace,
  type ParityCase,
} from '../../helpers/parity-cases.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

let base = '';
let ws = '';

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'leaf-tool-cli-'));
  ws = join(base, 'repo');
  mkdirSync(ws);
});

afterAll(() => {
  if (base) rmSync(base, { recursive: true, force: true });
});

beforeEach(() => clearDirectory(ws));

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function runMain(
  input: unknown,
  env: Record<string, string> = {},
  argv: string[] = [],
): Promise<Outcome> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  const text = typeof input === 'string' ? input : JSON.stringify(input);
  const code = await main(argv, { stdin: Readable.from([Buffer.from(text)]), stdout, stderr, env });
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

const byId = new Map<string, ParityCase>(loadParityCases().map((c) => [c.id, c]));

function parityCase(id: string): ParityCase {
  const c = byId.get(id);
  if (!c) throw new Error(`parity case ${id} is missing from cases.json`);
  return c;
}

describe('leaf-tool main()', () => {
  it('prints the exact observation of parity cases, without a trailing newline', async () => {
    for (const id of [
      'read-crlf',
      'read-truncated-env',
      'glob-sort-order',
      'bash-exit-and-streams',
      'raw-arguments-invalid-json',
      'edit-crlf-preserved',
    ]) {
      const c = parityCase(id);
      clearDirectory(ws);
      layoutWorkspace(ws, c);
      const call = c.calls[0];
      if (!call) throw new Error(`case ${id} has no call`);
      const request =
        call.raw_arguments !== undefined
          ? { tool: call.tool, raw_arguments: substituteWorkspace(call.raw_arguments, ws), workdir: ws }
          : { tool: call.tool, args: substituteWorkspace(call.args, ws), workdir: ws };
      const outcome = await runMain(request, c.env ?? {});
      expect({ id, ...outcome }).toEqual({
        id,
        code: 0,
        stdout: substituteWorkspace(call.expected, ws),
        stderr: '',
      });
      for (const [rel, text] of Object.entries(c.expected_files)) {
        expect(readFileSync(join(ws, rel), 'utf8'), `${id}: ${rel}`).toBe(text);
      }
    }
  });

  it('rejects bad requests with exit code 2 and a message on stderr', async () => {
    const bad: Array<[unknown, RegExp]> = [
      ['not json', /stdin is not one JSON object/],
      [[1, 2], /invalid request/],
      [{ args: {}, workdir: ws }, /tool/],
      [{ tool: 'Read', args: {}, workdir: 'relative/repo' }, /workdir must be an absolute path/],
      [{ tool: 'Read', args: {}, workdir: join(base, 'missing') }, /does not exist/],
      [{ tool: 'Read', workdir: ws }, /exactly one of "args"/],
      [{ tool: 'Read', args: {}, raw_arguments: '{}', workdir: ws }, /exactly one of "args"/],
      [{ tool: 'Read', args: ['a.txt'], workdir: ws }, /args/],
    ];
    for (const [input, message] of bad) {
      const outcome = await runMain(input);
      expect(outcome.code, JSON.stringify(input)).toBe(2);
      expect(outcome.stdout).toBe('');
      expect(outcome.stderr).toMatch(message);
    }
  });

  it('rejects an invalid LEAF_* variable with exit code 2', async () => {
    const outcome = await runMain(
      { tool: 'Read', args: { file_path: 'a' }, workdir: ws },
      { LEAF_TOOL_OUTPUT_CHARS: 'lots' },
    );
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain('LEAF_TOOL_OUTPUT_CHARS');
  });

  it('prints usage for --help and refuses unknown options', async () => {
    expect((await runMain('', {}, ['--help'])).stdout).toContain('usage: frognano-bot leaf-tool');
    expect((await runMain('', {}, ['--bogus'])).code).toBe(2);
  });
});

describe('frognano-bot leaf-tool (CLI entry point)', () => {
  it('reads the request from stdin and writes only the observation to stdout', async () => {
    const c = parityCase('read-unicode-line-separators');
    layoutWorkspace(ws, c);
    const call = c.calls[0];
    if (!call) throw new Error('case has no call');
    const request = JSON.stringify({ tool: call.tool, args: call.args, workdir: ws });
    const { code, stdout } = await new Promise<{ code: number; stdout: Buffer }>((resolve, reject) => {
      const child = execFile(
        process.execPath,
        ['--import', 'tsx', 'src/bin/cli.ts', 'leaf-tool'],
        {
          cwd: REPO_ROOT,
          encoding: 'buffer',
          timeout: 30_000,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        },
        (error, out) => {
          if (error && typeof error.code !== 'number') reject(error);
          else resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout: out });
        },
      );
      child.stdin?.end(request);
    });
    expect(code).toBe(0);
    expect(stdout.equals(Buffer.from(call.expected, 'utf8'))).toBe(true);
  });
});
