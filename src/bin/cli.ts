#!/usr/bin/env node
/**
 * `frognano-bot` entry point: dispatches to one module per command under `./commands/`, loaded lazily
 * so that `leaf-tool` (run once per tool call) does not pay for Probot or BullMQ.
 *
 * Exit codes: what the command returns; 2 for a usage error (the usage then goes to stderr); 1 for
 * an unexpected error. `--version` prints the version of package.json.
 */
import { readFileSync } from 'node:fs';
import { AppError } from '../app-error.js';

const COMMANDS: Record<string, string> = {
  run: 'Run the Leaf agent on a local repository (no GitHub): run --repo <path|url> --issue <file|-|text>',
  serve: 'Start the GitHub App webhook server (Probot), /healthz, /readyz, /metrics',
  worker: 'Start a queue worker that runs jobs (clone, sandbox, agent, tests, draft pull request)',
  'validate-config': 'Validate a repository config or (with --policy) an admin policy file',
  doctor: 'Check an install: GitHub App, Redis, model server, sandbox driver, egress',
  'leaf-tool': 'Run one Leaf tool call read as JSON from stdin; print the observation',
  trajectory: 'Print a stored trajectory as a readable transcript: trajectory <job id | file>',
  eval: 'Evaluate on your own history: eval run TASKS.jsonl --model-url URL --out DIR | eval mine --repo PATH (SWE-bench tasks) | eval report --out DIR',
  audit: 'Run records: audit verify [--repo owner/name] [--since DATE] | audit show <job id> | audit sweep',
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, text]) => `  ${name.padEnd(16)} ${text}`);
  return `usage: frognano-bot <command> [options]\n       frognano-bot --version\n\ncommands:\n${lines.join('\n')}\n\nfrognano-bot <command> --help shows a command's options.\n`;
}

/** The `version` of the package.json one level above `dist/` (or `src/` under tsx). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: unknown;
  };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`frognano-bot ${packageVersion()}\n`);
    return 0;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return 0;
  }
  if (!name) {
    process.stderr.write(`frognano-bot: no command given\n\n${usage()}`);
    return 2;
  }
  if (!Object.hasOwn(COMMANDS, name)) {
    process.stderr.write(`frognano-bot: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  const mod = (await import(`./commands/${name}.js`)) as { main: (argv: string[]) => Promise<number> };
  return mod.main(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof AppError) process.stderr.write(`frognano-bot: ${err.message} [${err.code}]\n`);
    else
      process.stderr.write(
        `frognano-bot: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
    process.exitCode = 1;
  },
);
