/**
 * The five Leaf tools (Read, Write, Edit, Glob, Bash) on the {@link Sandbox} interface, returning the
 * observation strings of the reference Leaf harness (`frognano/harness/leaf/tool_runner.py` of
 * microsoft/FrogNano) byte for byte; `test/fixtures/leaf-parity/cases.json` is the acceptance corpus.
 */
import { SandboxFileError } from '../../sandbox/sandbox.js';
import { bashTool } from './bash.js';
import { editTool } from './edit.js';
import { globTool } from './glob.js';
import { PythonError, pythonOsError } from './python-error.js';
import { readTool } from './read.js';
import type { ToolContext } from './tool-context.js';
import { writeTool } from './write.js';

export type { ToolContext } from './tool-context.js';
export { readLeafToolSettings, type LeafToolSettings } from './leaf-tool-settings.js';

type Tool = (args: Record<string, unknown>, ctx: ToolContext) => Promise<string>;

const TOOLS: ReadonlyMap<string, Tool> = new Map([
  ['Read', readTool],
  ['Write', writeTool],
  ['Edit', editTool],
  ['Glob', globTool],
  ['Bash', bashTool],
]);

/**
 * Parse a tool call's raw `arguments` string as the reference agent loop does (`_parse_arguments`):
 * a JSON object is returned as is; anything else — empty, broken JSON, an array, a string, a number,
 * `null` — becomes `{}`. Never throws.
 */
export function parseToolArguments(raw: string): Record<string, unknown> {
  if (!raw) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return {};
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/**
 * Execute the Leaf tool `name` (exact, case-sensitive) with parsed `args` in `ctx.sandbox` and return
 * its observation. Tool-level failures are observations, never exceptions: an unknown tool gives
 * `Unknown tool: <name>`, bad arguments and file errors give the reference's Python-style
 * `<ExceptionType>: <message>` lines.
 *
 * Throws the sandbox's {@link AppError} (`SANDBOX_GONE`, `SANDBOX_EXEC_FAILED`, …) when the tool cannot
 * be executed at all; the agent loop ends the trajectory as `tool_error` then.
 */
export async function executeTool(
  name: string,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<string> {
  const tool = TOOLS.get(name);
  if (!tool) return `Unknown tool: ${name}`;
  try {
    return await tool(args, ctx);
  } catch (err) {
    if (err instanceof PythonError) return err.observation;
    // A file error a tool did not map itself (should not happen): still an observation.
    if (err instanceof SandboxFileError) return pythonOsError(err.errno, err.path).observation;
    throw err;
  }
}
