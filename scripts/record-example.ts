/**
 * Records `examples/temperature/trajectory.json`: runs the real agent loop, tools and local sandbox on
 * `examples/temperature/repo` with a SCRIPTED model (the assistant turns below, written by hand in the
 * shape of a FrogNano-4B run). The demo (`npm run demo`) replays these turns.
 *
 *   npx tsx scripts/record-example.ts
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAgentLoop } from '../src/leaf/agent-loop.js';
import type { AssistantMessage, ChatModel } from '../src/llm/chat-model.js';
import { createLocalSandboxFactory } from '../src/sandbox/local/local-sandbox.js';
import { buildLocalInstruction } from '../src/pipeline/sources/local-source.js';
import { readFileSync } from 'node:fs';

let n = 0;
const call = (name: string, args: Record<string, unknown>) => ({
  id: `call_${String(++n).padStart(2, '0')}`,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});

const turns: AssistantMessage[] = [
  {
    role: 'assistant',
    content: null,
    reasoning_content: 'The issue is about fahrenheit_to_celsius. Let me find the conversion code.',
    tool_calls: [call('Glob', { pattern: '**/*.py' })],
  },
  {
    role: 'assistant',
    content: null,
    reasoning_content: 'thermo/convert.py holds the conversions. Read it.',
    tool_calls: [call('Read', { file_path: 'thermo/convert.py' })],
  },
  {
    role: 'assistant',
    content: null,
    reasoning_content:
      'fahrenheit - 32 * 5 / 9 parses as fahrenheit - (32 * 5 / 9) because of operator precedence. ' +
      'Run the tests first to confirm.',
    tool_calls: [call('Bash', { command: 'python3 -m pytest -q', description: 'Run the test suite' })],
  },
  {
    role: 'assistant',
    content: null,
    reasoning_content: 'Two failures, both in fahrenheit_to_celsius. Parenthesise the subtraction.',
    tool_calls: [
      call('Edit', {
        file_path: 'thermo/convert.py',
        old_string: '    return fahrenheit - 32 * 5 / 9',
        new_string: '    return (fahrenheit - 32) * 5 / 9',
      }),
    ],
  },
  {
    role: 'assistant',
    content: null,
    reasoning_content: 'Re-run the tests.',
    tool_calls: [call('Bash', { command: 'python3 -m pytest -q', description: 'Run the test suite again' })],
  },
  {
    role: 'assistant',
    content:
      'Fixed `fahrenheit_to_celsius` in `thermo/convert.py`: operator precedence made it compute ' +
      '`fahrenheit - (32 * 5 / 9)`; it now computes `(fahrenheit - 32) * 5 / 9`. ' +
      'All 3 tests pass (`python3 -m pytest -q`).',
    reasoning_content: 'All tests pass. Summarise the change.',
  },
];

const model: ChatModel = {
  model: 'scripted (hand-written turns)',
  async complete() {
    const message = turns.shift();
    if (!message) throw new Error('script exhausted');
    return { message, finishReason: message.tool_calls ? 'tool_calls' : 'stop', usage: null };
  },
};

const tmp = mkdtempSync(join(tmpdir(), 'frognano-record-'));
const workdir = join(tmp, 'repo');
try {
  cpSync('examples/temperature/repo', workdir, { recursive: true });
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: workdir,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 'x',
        GIT_AUTHOR_EMAIL: 'x@x',
        GIT_COMMITTER_NAME: 'x',
        GIT_COMMITTER_EMAIL: 'x@x',
      },
    });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'base');
  const sandbox = await createLocalSandboxFactory().create({ jobId: 'example', hostWorkdir: workdir });
  try {
    const trajectory = await runAgentLoop({
      model,
      sandbox,
      jobId: 'example-temperature',
      instruction: buildLocalInstruction(readFileSync('examples/temperature/ISSUE.md', 'utf8')),
      trajectoryPath: 'examples/temperature/trajectory.json',
    });
    console.log(`recorded: exit reason ${trajectory.exitReason}, ${trajectory.steps.length} steps`);
  } finally {
    await sandbox.destroy();
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
