import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The Leaf protocol data FrogNano-4B was trained with: system prompt, five tool schemas, request
 * defaults and evaluated limits. Source: `protocol.json` beside this file, a verbatim copy of
 * `shared/leaf-protocol/leaf-protocol.json` (MIT, Microsoft; see PROTOCOL-NOTICE.md). Requests send
 * these strings and schemas byte for byte; nothing here may be paraphrased.
 */
const toolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string(),
    description: z.string(),
    parameters: z.object({
      type: z.literal('object'),
      properties: z.record(z.string(), z.object({ type: z.string(), description: z.string() })),
      required: z.array(z.string()),
    }),
  }),
});

const protocolSchema = z.object({
  source: z.string(),
  system_prompt: z.string(),
  tools: z.array(toolSchema).length(5),
  request_defaults: z.object({
    temperature: z.number(),
    top_p: z.number(),
    top_k: z.number(),
    min_p: z.number(),
    repetition_penalty: z.number(),
    chat_template_kwargs: z.object({ enable_thinking: z.boolean() }),
    tool_choice: z.string(),
    parallel_tool_calls: z.boolean(),
    max_completion_tokens: z.number().int(),
  }),
  limits: z.object({
    /** Steps (model requests) per trajectory. */
    max_steps: z.number().int(),
    /** Context window in tokens. */
    max_context_tokens: z.number().int(),
    /** Completion tokens per step. */
    max_completion_tokens_per_turn: z.number().int(),
    /** Wall-clock limit of a trajectory in seconds. */
    max_total_time_sec: z.number(),
    /** Read observation cap in characters (env `LEAF_TOOL_OUTPUT_CHARS` overrides). */
    read_output_chars: z.number().int(),
    /** Bash observation cap in characters. */
    bash_output_chars: z.number().int(),
    /** Glob result cap in files. */
    glob_limit: z.number().int(),
    /** Bash timeout in seconds when the model gives none. */
    bash_default_timeout_sec: z.number(),
  }),
});

/** Shape of the protocol data. */
export type LeafProtocol = z.infer<typeof protocolSchema>;
/** One OpenAI-style function tool schema from the protocol. */
export type LeafToolSchema = LeafProtocol['tools'][number];

/** URL of `protocol.json` (resolved from `src/protocol` or `dist/protocol`; the build copies it). */
export const PROTOCOL_URL = new URL('./protocol.json', import.meta.url);

/** The raw text of protocol.json, exactly as shipped. */
export const PROTOCOL_TEXT: string = readFileSync(PROTOCOL_URL, 'utf8');

/** The parsed, validated protocol data. Throws a ZodError at import if the file was damaged. */
export const LEAF_PROTOCOL: LeafProtocol = protocolSchema.parse(JSON.parse(PROTOCOL_TEXT));

/** Names of the five Leaf tools, in protocol order. */
export const LEAF_TOOL_NAMES = LEAF_PROTOCOL.tools.map((t) => t.function.name);
