import { randomBytes } from 'node:crypto';
import type { AssistantMessage, ToolCall } from './chat-model.js';

/**
 * Recovery of tool calls written as qwen3_coder XML text.
 *
 * FrogNano-4B writes tool calls in the Qwen3-Coder format:
 *
 * ```
 * <tool_call>
 * <function=Read>
 * <parameter=file_path>
 * src/a.py
 * </parameter>
 * </function>
 * </tool_call>
 * ```
 *
 * SGLang turns this into `tool_calls` when started with `--tool-call-parser qwen3_coder`. When that
 * parser did not run (server started without it, or the call was written inside the thinking text
 * so that `--reasoning-parser qwen3` put it in `reasoning_content`), the XML arrives as text and
 * this module recovers it.
 *
 * Parsing rules follow the qwen3_coder parsers of SGLang
 * (`python/sglang/srt/function_call/qwen3_coder_detector.py`) and vLLM
 * (`vllm/entrypoints/openai/tool_parsers/qwen3coder_tool_parser.py`), read for their rules only:
 * - a call is `<function=NAME>` … `</function>`, usually wrapped in `<tool_call>` … `</tool_call>`;
 *   the wrapper is optional (the model sometimes leaves out the opener), and a call whose
 *   `</function>` is missing ends at `</tool_call>`; several calls may follow each other;
 * - a parameter is `<parameter=NAME>` VALUE and ends at `</parameter>`, or at the next
 *   `<parameter=`, or at the end of the function body;
 * - markup inside a value is part of the value (a Write of a document that quotes a call): a
 *   closing tag is structure only when a delimiter follows it (another parameter, the end of the
 *   function, the end of the call), as in vLLM's parser; among the readings left, the first one
 *   in which no parameter repeats and no stray closing tag follows the call wins (see `parseCall`);
 * - from VALUE exactly one leading `\n` and one trailing `\n` are removed, nothing else (so a file
 *   body keeps its indentation and blank lines);
 * - values are typed by the tool's JSON schema (`parameters.properties[name].type`, else the first
 *   non-null type of its `anyOf` / `oneOf`): `string` keeps
 *   the text as is ("03106" stays "03106"); `integer` / `number` parse numbers; `boolean` parses
 *   `true` / `false` (any case); `object` / `array` parse JSON; a parameter the schema does not know,
 *   or a tool not in the list, keeps the string.
 *
 * Deliberate differences from the server parsers, each so that a malformed call reaches the tool
 * as an argument error the model can read instead of being silently changed:
 * - a value that does not parse as its schema type stays a string (the servers turn a bad boolean
 *   into `false`);
 * - `null` becomes JSON `null` only for non-string parameters (the servers do it for every type,
 *   which would turn a file whose content is `null` into no content);
 * - non-string values are trimmed before parsing (` 42 ` is 42);
 * - a `<function=` without `</function>` or `</tool_call>` (output cut off by the token cap) is not
 *   recovered and stays in the text: running a truncated `Write` would write a truncated file;
 *   the text after it stays text too, so a call quoted inside its content cannot run instead.
 */

const TOOL_CALL_OPEN = '<tool_call>';
const TOOL_CALL_CLOSE = '</tool_call>';
const FUNCTION_OPEN = '<function=';
const FUNCTION_CLOSE = '</function>';
const PARAMETER_OPEN = '<parameter=';
const PARAMETER_CLOSE = '</parameter>';

/** A tool or parameter name we accept; anything else means the text is not a real call. */
const NAME_PATTERN = /^[A-Za-z_][\w.:-]*$/;

/** Result of {@link parseQwen3CoderToolCalls}. */
export interface Qwen3CoderParseResult {
  /** Recovered tool calls, in text order. `arguments` is a JSON object string. */
  toolCalls: ToolCall[];
  /**
   * The input without the XML of the recovered calls: the pieces of text around them, each
   * trimmed, empty ones dropped, joined by one newline (the input as is when nothing was recovered).
   */
  text: string;
}

/** Options of {@link parseQwen3CoderToolCalls}. */
export interface Qwen3CoderParseOptions {
  /** Makes tool call ids; default `call_` + 24 random hex characters (the servers' form). */
  generateId?: () => string;
}

/** True when `text` holds what looks like a qwen3_coder tool call (`<function=`). Cheap pre-check. */
export function hasQwen3CoderToolCallMarkup(text: string | null | undefined): boolean {
  return typeof text === 'string' && text.includes(FUNCTION_OPEN);
}

/** A new tool call id: `call_` followed by 24 random hex characters. */
export function generateToolCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

/**
 * Recover every complete qwen3_coder tool call in `text`.
 *
 * @param text model output (`content` or `reasoning_content`).
 * @param tools the tool schemas sent with the request (OpenAI function-tool shape, as in
 *   protocol.json); used only to type the values. Entries of another shape are ignored.
 * @returns the calls and the remaining text. Never throws: text that is not a complete call is
 *   left in `text`.
 */
export function parseQwen3CoderToolCalls(
  text: string,
  tools: readonly unknown[],
  options: Qwen3CoderParseOptions = {},
): Qwen3CoderParseResult {
  const generateId = options.generateId ?? generateToolCallId;
  const schemas = parameterTypesByTool(tools);
  const toolCalls: ToolCall[] = [];
  const removed: Array<[start: number, end: number]> = [];

  let pos = 0;
  for (;;) {
    const fnStart = text.indexOf(FUNCTION_OPEN, pos);
    if (fnStart === -1) break;
    const nameEnd = text.indexOf('>', fnStart + FUNCTION_OPEN.length);
    if (nameEnd === -1) break;
    const name = text.slice(fnStart + FUNCTION_OPEN.length, nameEnd).trim();
    if (!NAME_PATTERN.test(name)) {
      // Not a call at all: leave it in the text.
      pos = nameEnd + 1;
      continue;
    }
    const call = parseCall(text, nameEnd + 1);
    // A call that never ends was cut off (token cap): it stays text, and so does everything after
    // it, since a call quoted inside its values must not run in its place.
    if (call === undefined) break;
    let start = fnStart;
    const beforeSpace = skipWhitespaceBackward(text, fnStart);
    if (text.slice(0, beforeSpace).endsWith(TOOL_CALL_OPEN)) start = beforeSpace - TOOL_CALL_OPEN.length;

    const types = schemas.get(name);
    const args: Record<string, unknown> = {};
    for (const [paramName, raw] of call.params) {
      if (NAME_PATTERN.test(paramName)) args[paramName] = typeValue(raw, types?.get(paramName));
    }
    toolCalls.push({
      id: generateId(),
      type: 'function',
      function: { name, arguments: JSON.stringify(args) },
    });
    removed.push([start, call.end]);
    pos = call.end;
  }

  if (removed.length === 0) return { toolCalls, text };
  // The text around the calls, each piece trimmed, empty pieces dropped, one newline between.
  const pieces: string[] = [];
  let cursor = 0;
  for (const [start, end] of removed) {
    pieces.push(text.slice(cursor, start).trim());
    cursor = end;
  }
  pieces.push(text.slice(cursor).trim());
  return { toolCalls, text: pieces.filter((p) => p !== '').join('\n') };
}

/**
 * Apply {@link parseQwen3CoderToolCalls} to an assistant message that came back without
 * `tool_calls`. Calls in `content` win; only when `content` holds none is `reasoning_content`
 * searched (thinking text often drafts a call that `content` then makes for real, and running both
 * would run it twice). The XML is removed from the field it was found in; a field left empty
 * becomes `null`.
 *
 * @returns a new message (the input is not changed) and whether calls were recovered. A message
 *   that already has `tool_calls` is returned unchanged.
 */
export function recoverQwen3CoderToolCalls(
  message: AssistantMessage,
  tools: readonly unknown[],
  options: Qwen3CoderParseOptions = {},
): { message: AssistantMessage; recovered: boolean } {
  if (message.tool_calls !== undefined && message.tool_calls.length > 0) {
    return { message, recovered: false };
  }
  for (const field of ['content', 'reasoning_content'] as const) {
    const text = message[field];
    if (!hasQwen3CoderToolCallMarkup(text)) continue;
    const parsed = parseQwen3CoderToolCalls(text as string, tools, options);
    if (parsed.toolCalls.length === 0) continue;
    return {
      message: { ...message, [field]: parsed.text === '' ? null : parsed.text, tool_calls: parsed.toolCalls },
      recovered: true,
    };
  }
  return { message, recovered: false };
}

function skipWhitespace(text: string, from: number): number {
  let i = from;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return i;
}

function skipWhitespaceBackward(text: string, from: number): number {
  let i = from;
  while (i > 0 && /\s/.test(text[i - 1] as string)) i--;
  return i;
}

/** One parsed call: its parameters in order (raw values) and the index just past its end. */
interface ParsedCall {
  params: Array<[name: string, value: string]>;
  end: number;
}

/** Upper bound on the parses tried for one call, so hostile text cannot make recovery slow. */
const MAX_PARSE_ATTEMPTS = 2_000;
/** Upper bound on the places one value may end that are tried. */
const MAX_VALUE_ENDS = 64;

/**
 * Parse one call whose body starts at `bodyStart` (just after `<function=NAME>`).
 *
 * Markup may appear inside a value (a document quoting a call), so a closing tag is structure only
 * when what follows it is a delimiter: `</parameter>` must be followed (after whitespace) by
 * another `<parameter=`, `</function>` or `</tool_call>`. Where several readings remain, the first
 * consistent one wins: no parameter given twice, and no stray `</parameter>` or `</function>`
 * between the end of the call and the next `<function=` (which would mean the call really ended
 * later). A value without `</parameter>` ends at the next `<parameter=` or at the end of the
 * function, tried after every explicit end. When no reading is consistent the first complete one
 * is used.
 *
 * @returns `undefined` when no reading reaches the end of the function (output cut off).
 */
function parseCall(text: string, bodyStart: number): ParsedCall | undefined {
  let attempts = 0;
  let fallback: ParsedCall | undefined;
  const params: Array<[string, string]> = [];

  const atStructure = (i: number): number | undefined => {
    if (text.startsWith(PARAMETER_OPEN, i)) return i;
    if (text.startsWith(FUNCTION_CLOSE, i) || text.startsWith(TOOL_CALL_CLOSE, i)) return i;
    return undefined;
  };

  const finish = (i: number): ParsedCall | undefined => {
    let end = i + (text.startsWith(FUNCTION_CLOSE, i) ? FUNCTION_CLOSE.length : TOOL_CALL_CLOSE.length);
    if (text.startsWith(FUNCTION_CLOSE, i)) {
      const afterSpace = skipWhitespace(text, end);
      if (text.startsWith(TOOL_CALL_CLOSE, afterSpace)) end = afterSpace + TOOL_CALL_CLOSE.length;
    }
    const call: ParsedCall = { params: [...params], end };
    const names = new Set(params.map(([n]) => n));
    if (names.size === params.length && !strayCloserAfter(text, end)) return call;
    fallback ??= call;
    return undefined;
  };

  // `i` is at a `<parameter=`, `</function>` or `</tool_call>`.
  const step = (i: number): ParsedCall | undefined => {
    if (++attempts > MAX_PARSE_ATTEMPTS) return undefined;
    if (!text.startsWith(PARAMETER_OPEN, i)) return finish(i);
    const nameEnd = text.indexOf('>', i + PARAMETER_OPEN.length);
    if (nameEnd === -1) return undefined;
    const name = text.slice(i + PARAMETER_OPEN.length, nameEnd).trim();
    for (const [valueEnd, next] of valueEnds(text, nameEnd + 1, atStructure)) {
      params.push([name, trimOneNewline(text.slice(nameEnd + 1, valueEnd))]);
      const result = step(next);
      params.pop();
      if (result !== undefined) return result;
      if (attempts > MAX_PARSE_ATTEMPTS) break;
    }
    return undefined;
  };

  const first = firstIndexOf(text, bodyStart, [PARAMETER_OPEN, FUNCTION_CLOSE, TOOL_CALL_CLOSE]);
  if (first === -1) return undefined;
  return step(first) ?? fallback;
}

/**
 * The places a value starting at `from` may end, in the order they are tried:
 * `[valueEnd, next]` with `next` at the structure that follows. First every `</parameter>` that
 * is followed by a delimiter, then every `<parameter=`, `</function>` and `</tool_call>` (a value
 * whose `</parameter>` is missing).
 */
function valueEnds(
  text: string,
  from: number,
  atStructure: (i: number) => number | undefined,
): Array<[number, number]> {
  const ends: Array<[number, number]> = [];
  for (let p = text.indexOf(PARAMETER_CLOSE, from); p !== -1 && ends.length < MAX_VALUE_ENDS;) {
    const next = atStructure(skipWhitespace(text, p + PARAMETER_CLOSE.length));
    if (next !== undefined) ends.push([p, next]);
    p = text.indexOf(PARAMETER_CLOSE, p + 1);
  }
  const implicit = [PARAMETER_OPEN, FUNCTION_CLOSE, TOOL_CALL_CLOSE];
  for (let p = firstIndexOf(text, from, implicit); p !== -1 && ends.length < 2 * MAX_VALUE_ENDS;) {
    ends.push([p, p]);
    p = firstIndexOf(text, p + 1, implicit);
  }
  return ends;
}

/** True when a `</parameter>` or `</function>` comes after `end` and before the next `<function=`. */
function strayCloserAfter(text: string, end: number): boolean {
  const nextCall = text.indexOf(FUNCTION_OPEN, end);
  const limit = nextCall === -1 ? text.length : nextCall;
  for (const closer of [PARAMETER_CLOSE, FUNCTION_CLOSE]) {
    const at = text.indexOf(closer, end);
    if (at !== -1 && at < limit) return true;
  }
  return false;
}

/** The smallest index ≥ `from` at which one of `needles` occurs, or -1. */
function firstIndexOf(text: string, from: number, needles: readonly string[]): number {
  let best = -1;
  for (const needle of needles) {
    const at = text.indexOf(needle, from);
    if (at !== -1 && (best === -1 || at < best)) best = at;
  }
  return best;
}

/** Remove exactly one leading and one trailing `\n` (the servers' rule). */
function trimOneNewline(value: string): string {
  let v = value;
  if (v.startsWith('\n')) v = v.slice(1);
  if (v.endsWith('\n')) v = v.slice(0, -1);
  return v;
}

const INTEGER_PATTERN = /^[+-]?\d+$/;
const NUMBER_PATTERN = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Type one raw value by its JSON-schema type name (`undefined`: not in the schema → string). */
function typeValue(raw: string, type: string | undefined): unknown {
  if (type === undefined || type === 'string') return raw;
  const trimmed = raw.trim();
  if (trimmed.toLowerCase() === 'null') return null;
  switch (type) {
    case 'integer': {
      if (!INTEGER_PATTERN.test(trimmed)) return raw;
      const n = Number(trimmed);
      return Number.isSafeInteger(n) ? n : raw;
    }
    case 'number': {
      if (!NUMBER_PATTERN.test(trimmed)) return raw;
      const n = Number(trimmed);
      return Number.isFinite(n) ? n : raw;
    }
    case 'boolean': {
      const lower = trimmed.toLowerCase();
      return lower === 'true' ? true : lower === 'false' ? false : raw;
    }
    case 'object':
    case 'array': {
      try {
        const parsed: unknown = JSON.parse(trimmed);
        const isArray = Array.isArray(parsed);
        const fits = type === 'array' ? isArray : typeof parsed === 'object' && parsed !== null && !isArray;
        return fits ? parsed : raw;
      } catch {
        return raw;
      }
    }
    default:
      return raw;
  }
}

/**
 * tool name → parameter name → JSON-schema type name, from OpenAI function-tool schemas. A type
 * given as a list (`["integer", "null"]`) counts as its first non-null entry.
 */
function parameterTypesByTool(tools: readonly unknown[]): Map<string, Map<string, string>> {
  const byTool = new Map<string, Map<string, string>>();
  for (const tool of tools) {
    const fn = (tool as { function?: { name?: unknown; parameters?: { properties?: unknown } } } | null)
      ?.function;
    if (typeof fn?.name !== 'string') continue;
    const properties = fn.parameters?.properties;
    const types = new Map<string, string>();
    if (typeof properties === 'object' && properties !== null) {
      for (const [param, schema] of Object.entries(properties as Record<string, unknown>)) {
        types.set(param, schemaTypeName(schema) ?? 'string');
      }
    }
    byTool.set(fn.name, types);
  }
  return byTool;
}

/**
 * The JSON-schema type name of one property: `type` as a string, the first non-null entry of a
 * `type` list, or else the first non-null type among `anyOf` (then `oneOf`) alternatives.
 */
function schemaTypeName(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const { type, anyOf, oneOf } = schema as { type?: unknown; anyOf?: unknown; oneOf?: unknown };
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.find((x): x is string => typeof x === 'string' && x !== 'null');
  for (const alternatives of [anyOf, oneOf]) {
    if (!Array.isArray(alternatives)) continue;
    for (const alternative of alternatives) {
      const name = schemaTypeName(alternative);
      if (name !== undefined && name !== 'null') return name;
    }
  }
  return undefined;
}
