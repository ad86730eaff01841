import { stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { isAppError } from '../../app-error.js';
import { executeTool, parseToolArguments, readLeafToolSettings } from '../../leaf/tools/index.js';
import type { LeafToolSettings } from '../../leaf/tools/index.js';
import { createLocalSandboxFactory } from '../../sandbox/local/local-sandbox.js';
import type { Sandbox } from '../../sandbox/sandbox.js';

const USAGE = `usage: frognano-bot leaf-tool < request.json

Run one Leaf tool call in a local (bubblewrap) sandbox over an existing directory and print the
observation to stdout exactly (no added newline). The request is one JSON object on stdin:

  {"tool": "Read", "args": {"file_path": "a.txt"}, "workdir": "/abs/path/repo"}
  {"tool": "Bash", "raw_arguments": "{\\"command\\": \\"ls\\"}", "workdir": "/abs/path/repo"}

"raw_arguments" is the arguments string as a model sent it, parsed as the agent loop parses it
(anything that is not a JSON object becomes {}). The LEAF_TOOL_OUTPUT_CHARS, LEAF_BASH_OUTPUT_CHARS,
LEAF_GLOB_LIMIT and LEAF_BASH_TIMEOUT_SEC environment variables apply.

exit codes: 0 observation printed (tool errors are observations too), 1 the sandbox failed,
2 bad request or usage
`;

/** The request read from stdin (extra fields are ignored). */
const requestSchema = z
  .object({
    tool: z.string().min(1, 'tool must be a non-empty string'),
    args: z.record(z.string(), z.unknown()).optional(),
    raw_arguments: z.string().optional(),
    workdir: z.string().refine(isAbsolute, 'workdir must be an absolute path'),
  })
  .refine((r) => (r.args === undefined) !== (r.raw_arguments === undefined), {
    message: 'give exactly one of "args" (an object) and "raw_arguments" (a string)',
  });

/** Streams and environment of {@link main}; defaults are the process's. */
export interface LeafToolIo {
  stdin?: Readable;
  stdout?: Writable;
  stderr?: Writable;
  env?: Record<string, string | undefined>;
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

function write(stream: Writable, text: string): Promise<void> {
  return new Promise((resolve, reject) => stream.write(text, (err) => (err ? reject(err) : resolve())));
}

/**
 * `frognano-bot leaf-tool`: run ONE Leaf tool call read as JSON from stdin — `{"tool", "args" |
 * "raw_arguments", "workdir"}` — in a local sandbox whose workspace is `workdir` (visible inside at the
 * same absolute path), and write the observation to stdout byte for byte, without a newline. Used by
 * black-box parity checks against the reference Leaf harness.
 *
 * @param argv arguments after the command name (only `--help`).
 * @param io streams and environment (tests inject them); default the process's.
 * @returns 0 when an observation was printed, 1 when the sandbox could not run the call
 *   (`SANDBOX_UNAVAILABLE`, `SANDBOX_GONE`…), 2 for a bad request, bad `LEAF_*` value or usage.
 */
export async function main(argv: string[], io: LeafToolIo = {}): Promise<number> {
  const stdin = io.stdin ?? process.stdin;
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const env = io.env ?? process.env;
  const fail = async (code: number, message: string): Promise<number> => {
    await write(stderr, `frognano-bot leaf-tool: ${message}\n`);
    return code;
  };

  let help: boolean | undefined;
  try {
    help = parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } } }).values.help;
  } catch (err) {
    return fail(2, `${(err as Error).message}\n\n${USAGE}`);
  }
  if (help) {
    await write(stdout, USAGE);
    return 0;
  }

  let payload: unknown;
  try {
    payload = JSON.parse(await readAll(stdin));
  } catch (err) {
    return fail(2, `stdin is not one JSON object: ${(err as Error).message}`);
  }
  const parsed = requestSchema.safeParse(payload);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`,
    );
    return fail(2, `invalid request: ${problems.join('; ')}`);
  }
  const request = parsed.data;
  try {
    if (!(await stat(request.workdir)).isDirectory())
      return fail(2, `workdir ${request.workdir} is not a directory`);
  } catch {
    return fail(2, `workdir ${request.workdir} does not exist`);
  }
  let settings: LeafToolSettings;
  try {
    settings = readLeafToolSettings(env);
  } catch (err) {
    if (isAppError(err, 'CONFIG_INVALID')) return fail(2, err.message);
    throw err;
  }
  const args =
    request.raw_arguments !== undefined ? parseToolArguments(request.raw_arguments) : (request.args ?? {});

  let sandbox: Sandbox | undefined;
  try {
    sandbox = await createLocalSandboxFactory().create({ jobId: 'leaf-tool', hostWorkdir: request.workdir });
    const observation = await executeTool(request.tool, args, { sandbox, settings });
    await write(stdout, observation);
    return 0;
  } catch (err) {
    if (isAppError(err)) return fail(1, `${err.message} [${err.code}]`);
    throw err;
  } finally {
    await sandbox?.destroy();
  }
}
