import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main as runCommand } from '../../src/bin/commands/run.js';
import type { Trajectory } from '../../src/leaf/trajectory.js';
import type { FolderSummary } from '../../src/pipeline/publishers/folder-publisher.js';
import { renderTestComparison, testVerdict } from '../../src/pipeline/verification/evidence-markdown.js';
import { createLocalSandboxFactory } from '../../src/sandbox/local/local-sandbox.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../helpers/scripted-model-server.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/bin/cli.js');

function runCli(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = execFile('node', [CLI, ...args], { cwd: ROOT, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      done({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

let tmp: string;
let server: ScriptedModelServer | undefined;

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does it)`);
});

afterEach(async () => {
  await server?.close();
  server = undefined;
  rmSync(tmp, { recursive: true, force: true });
});

/** A small Python project with one failing pytest test, made by the test. */
function makeProject(): string {
  tmp = mkdtempSync(join(tmpdir(), 'frognano-e2e-run-'));
  const repo = join(tmp, 'project');
  mkdirSync(join(repo, 'tests'), { recursive: true });
  writeFileSync(join(repo, 'shop.py'), 'def total(prices, discount):\n    return sum(prices) * discount\n');
  writeFileSync(
    join(repo, 'tests', 'test_shop.py'),
    'from shop import total\n\n\ndef test_discount_is_a_fraction_off():\n    assert total([10, 10], 0.25) == 15\n',
  );
  writeFileSync(join(repo, 'pytest.ini'), '[pytest]\npythonpath = .\n');
  const git = (...a: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...a], { cwd: repo });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'initial');
  return repo;
}

describe('frognano-bot run (end to end, scripted SGLang server, real sandbox)', () => {
  it('reads, edits, runs pytest through Bash, and exits 0 with a patch that makes the test pass', async () => {
    const repo = makeProject();
    server = await startScriptedModelServer({
      script: [
        {
          kind: 'tool_calls',
          reasoning: 'Find the code.',
          calls: [{ name: 'Read', arguments: { file_path: 'shop.py' } }],
        },
        { kind: 'tool_calls', calls: [{ name: 'Bash', arguments: { command: 'python3 -m pytest -q' } }] },
        {
          kind: 'tool_calls',
          calls: [
            {
              name: 'Edit',
              arguments: {
                file_path: 'shop.py',
                old_string: 'sum(prices) * discount',
                new_string: 'sum(prices) * (1 - discount)',
              },
            },
          ],
        },
        // Recovered from qwen3_coder XML: the server's tool-call parser "did not run" for this turn.
        { kind: 'xml_content', calls: [{ name: 'Bash', arguments: { command: 'python3 -m pytest -q' } }] },
        { kind: 'final', content: 'The discount is now subtracted; tests pass.' },
      ],
    });
    const out = join(tmp, 'out');
    const r = await runCli([
      'run',
      '--repo',
      repo,
      '--issue',
      'total() applies the discount wrongly',
      '--model-url',
      server.url,
      '--out',
      out,
    ]);
    expect(r.stderr).toContain('step 1/150');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('exit reason   agent');
    expect(r.stdout).toContain('files changed shop.py');
    expect(r.stdout).toMatch(/tests\s+passed: python3 -m pytest -q/);

    const trajectory = JSON.parse(readFileSync(join(out, 'trajectory.json'), 'utf8')) as Trajectory;
    expect(trajectory.exitReason).toBe('agent');
    expect(trajectory.steps).toHaveLength(5);
    expect(trajectory.steps[1]!.toolCalls[0]!.observation).toMatch(/^Exit code: 1\nSTDOUT:\n/);
    expect(trajectory.steps[3]!.recoveredToolCalls).toBe(true);
    expect(trajectory.steps[3]!.toolCalls[0]!.observation).toMatch(/^Exit code: 0\nSTDOUT:\n[\s\S]*1 passed/);

    // The patch applies to the original repository and makes its test pass.
    const patch = readFileSync(join(out, 'patch.diff'), 'utf8');
    expect(patch).toContain('+    return sum(prices) * (1 - discount)');
    execFileSync('git', ['apply', '--check', join(out, 'patch.diff')], { cwd: repo });
    execFileSync('git', ['apply', join(out, 'patch.diff')], { cwd: repo });
    execFileSync('/usr/bin/python3', ['-m', 'pytest', '-q', '-p', 'no:cacheprovider'], { cwd: repo });

    // summary.json: the outcome, its exit code, and the pull request's base/head comparison as data.
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as FolderSummary;
    expect(summary.outcome.kind).toBe('patch_ready');
    expect(summary.exitCode).toBe(0);
    expect(summary.comparison).toMatchObject({
      granularity: 'per-test',
      fixed: [expect.stringContaining('test_discount_is_a_fraction_off')],
      broken: [],
      nothingBroken: true,
    });
    expect(summary.verdict).toBe(testVerdict(summary.comparison!));
    expect(renderTestComparison(summary.comparison!)).toContain('Fixed (failed → passed)');
    expect(summary.baseTests).toMatchObject({ passed: false, command: 'python3 -m pytest -q' });
    expect(summary.tampering).toMatchObject({ flagged: false });
    expect(r.stdout).toContain('base → head');

    // Every request carried the Leaf defaults and extended the previous one.
    for (let i = 1; i < server.requests.length; i++) {
      const prev = server.requests[i - 1]!.body.messages as unknown[];
      const cur = server.requests[i]!.body.messages as unknown[];
      expect(cur.slice(0, prev.length)).toEqual(prev);
    }
    expect(server.requests[0]!.body).toMatchObject({
      temperature: 0.6,
      top_k: 20,
      max_completion_tokens: 8192,
    });
  });

  it('--keep leaves a fresh repository with the patch: nothing the model planted runs on git status, add or commit', async () => {
    const repo = makeProject();
    const marker = join(tmp, 'pwned');
    const hook = `#!/bin/sh\necho "$0" >> ${marker}\n`;
    const hooks = ['pre-commit', 'post-commit', 'commit-msg', 'prepare-commit-msg', 'post-index-change'];
    server = await startScriptedModelServer({
      script: [
        {
          kind: 'tool_calls',
          calls: [
            {
              // Hooks and core.fsmonitor in the sandbox's .git, and hooks and an fsmonitor script in
              // the tree (part of the patch), all writing to a host path if they ever ran on the host.
              name: 'Bash',
              arguments: {
                command: [
                  `for h in ${hooks.join(' ')}; do printf '${hook.replace(/\n/g, '\\n')}' > .git/hooks/$h; chmod +x .git/hooks/$h; done`,
                  'mkdir -p .githooks && cp .git/hooks/pre-commit .githooks/pre-commit',
                  `printf '#!/bin/sh\\necho fsmonitor >> ${marker}\\n' > fsmon.sh && chmod +x fsmon.sh`,
                  'git config core.fsmonitor "$PWD/fsmon.sh"',
                  'git config core.hooksPath .githooks',
                  'git config alias.status "!sh fsmon.sh"',
                  'ls .git/hooks | grep -v sample | wc -l',
                ].join(' && '),
              },
            },
          ],
        },
        {
          kind: 'tool_calls',
          calls: [
            {
              name: 'Edit',
              arguments: {
                file_path: 'shop.py',
                old_string: 'sum(prices) * discount',
                new_string: 'sum(prices) * (1 - discount)',
              },
            },
          ],
        },
        { kind: 'final', content: 'Fixed.' },
      ],
    });
    const out = join(tmp, 'out');
    const r = await runCli([
      'run',
      '--repo',
      repo,
      '--issue',
      'fix total()',
      '--model-url',
      server.url,
      '--out',
      out,
      '--keep',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const trajectory = JSON.parse(readFileSync(join(out, 'trajectory.json'), 'utf8')) as Trajectory;
    // The planting worked inside the sandbox.
    expect(trajectory.steps[0]!.toolCalls[0]!.observation).toMatch(/^Exit code: 0\nSTDOUT:\n5\n/);
    const kept = /workspace kept at (\S+)/.exec(r.stdout)?.[1];
    expect(kept).toBeDefined();
    try {
      const git = (cwd: string, ...a: string[]) =>
        execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...a], { cwd, encoding: 'utf8' });
      // The kept folder: a fresh .git (no hooks, no config from the sandbox), the patch applied.
      expect(git(kept!, 'diff', '--cached', '--name-only').split('\n').sort()).toEqual(
        ['', '.githooks/pre-commit', 'fsmon.sh', 'shop.py'].sort(),
      );
      expect(readFileSync(join(kept!, 'shop.py'), 'utf8')).toContain('(1 - discount)');
      const hooksDir = join(kept!, '.git', 'hooks');
      expect(existsSync(hooksDir) ? readdirSync(hooksDir) : []).toEqual([]);
      expect(git(kept!, 'config', '--local', '--list')).not.toMatch(/fsmonitor|hookspath|alias/i);
      for (const dir of [kept!, repo]) {
        git(dir, 'status');
        writeFileSync(join(dir, 'new.txt'), 'x\n');
        git(dir, 'add', '-A');
        git(dir, 'commit', '-qm', 'after the run');
        git(dir, 'status');
      }
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(kept!.replace(/\/repo$/, ''), { recursive: true, force: true });
    }
  });

  it('says how to start SGLang when no server answers, and exits 3', async () => {
    const repo = makeProject();
    const r = await runCli([
      'run',
      '--repo',
      repo,
      '--issue',
      'x',
      '--model-url',
      'http://127.0.0.1:9/v1',
      '--out',
      join(tmp, 'o'),
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('No model server answered at http://127.0.0.1:9/v1');
    expect(r.stderr.match(/No model server answered/g)).toHaveLength(1);
    expect(r.stderr).toContain('python -m sglang.launch_server --model-path microsoft/FrogNano-4B-2609');
  });

  it('exits 1 without a patch when the agent stops at the step cap', async () => {
    const repo = makeProject();
    server = await startScriptedModelServer({
      script: () => ({ kind: 'tool_calls', calls: [{ name: 'Glob', arguments: { pattern: '**/*.py' } }] }),
    });
    const out = join(tmp, 'out');
    const r = await runCli(
      ['run', '--repo', repo, '--issue', '-', '--model-url', server.url, '--max-steps', '2', '--out', out],
      'fix it',
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('exit reason   max_turns');
    expect(readFileSync(join(out, 'patch.diff'), 'utf8')).toBe('');
  });

  it('replays the shipped example: the README demo', async () => {
    tmp = mkdtempSync(join(tmpdir(), 'frognano-e2e-demo-'));
    const r = await runCli([
      'run',
      '--repo',
      'examples/temperature/repo',
      '--issue',
      'examples/temperature/ISSUE.md',
      '--model-url',
      'replay:examples/temperature/trajectory.json',
      '--out',
      join(tmp, 'out'),
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('exit reason   agent');
    expect(r.stdout).toContain('REPLAYED');
    expect(readFileSync(join(tmp, 'out', 'patch.diff'), 'utf8')).toContain(
      '+    return (fahrenheit - 32) * 5 / 9',
    );
  });

  it('reports a fix that deletes a test as flagged (tampering) and exits 4, the README code for it', async () => {
    const repo = makeProject();
    writeFileSync(join(repo, 'tests', 'test_other.py'), 'def test_other():\n    assert True\n');
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '-A'], { cwd: repo });
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'other'], {
      cwd: repo,
    });
    server = await startScriptedModelServer({
      script: [
        { kind: 'tool_calls', calls: [{ name: 'Bash', arguments: { command: 'rm tests/test_shop.py' } }] },
        { kind: 'final', content: 'The failing test is gone.' },
      ],
    });
    const out = join(tmp, 'out');
    const r = await runCli([
      'run',
      '--repo',
      repo,
      '--issue',
      'fix total()',
      '--model-url',
      server.url,
      '--out',
      out,
    ]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stdout).toMatch(/WARNING: .*test/i);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as FolderSummary;
    expect(summary).toMatchObject({ outcome: { kind: 'patch_ready' }, exitCode: 4 });
    expect(summary.tampering?.flagged).toBe(true);
    expect(summary.tampering?.flags).toContainEqual(
      expect.objectContaining({ kind: 'deleted_test_file', path: 'tests/test_shop.py' }),
    );
    expect(summary.comparison?.removedTests.map((t) => t.id)).toEqual([
      expect.stringContaining('test_discount_is_a_fraction_off'),
    ]);
    expect(summary.warnings.length).toBeGreaterThan(0);
    expect(readFileSync(join(out, 'patch.diff'), 'utf8')).toContain('deleted file mode');
  });

  it('refuses to run when the sandbox can reach the network, as the worker does (exit 7)', async () => {
    const repo = makeProject();
    server = await startScriptedModelServer({ script: [{ kind: 'final', content: 'never asked' }] });
    const out = join(tmp, 'out');
    // TESTING ONLY: a sandbox that shares the host's network reaches run's loopback canary.
    // A root test's sandboxes run as an unprivileged uid, which must traverse (not list) the folders.
    chmodSync(tmp, 0o711);
    mkdirSync(join(tmp, 'sandboxes'), { mode: 0o711 });
    const online = createLocalSandboxFactory({ shareNetwork: true, workRoot: join(tmp, 'sandboxes') });
    const printed: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (
      printed.push(String(chunk)),
      true
    )) as typeof process.stdout.write;
    let code: number;
    try {
      code = await runCommand(['--repo', repo, '--issue', 'x', '--model-url', server.url, '--out', out], {
        sandboxFactory: online,
      });
    } finally {
      process.stdout.write = write;
    }
    expect(code).toBe(7);
    expect(printed.join('')).toMatch(/sandbox_failed: the sandbox is not offline: .*reached .*host loopback/);
    expect(server.requests).toHaveLength(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as FolderSummary;
    expect(summary).toMatchObject({ outcome: { kind: 'sandbox_failed' }, exitCode: 7 });
    expect(existsSync(join(out, 'patch.diff'))).toBe(false);
  });

  it('refuses bad usage with exit 2', async () => {
    tmp = mkdtempSync(join(tmpdir(), 'frognano-e2e-usage-'));
    const r = await runCli(['run', '--issue', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--repo is required');
    const s = await runCli(['run', '--repo', '.', '--issue', 'x', '--max-steps', 'lots']);
    expect(s.code).toBe(2);
    expect(s.stderr).toContain('--max-steps must be a whole number above 0 (got "lots")');
  });
});
