import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { AppError, throwIfAborted } from '../app-error.js';
import type { Trajectory } from './trajectory.js';
import { parseTrajectoryText, trajectoryFileCandidates } from '../observability/trajectory-journal.js';
import type { AssistantMessage, ChatModel, ChatRequest, ChatResponse, Usage } from '../llm/chat-model.js';
import { createSglangClient, type SglangClientOptions } from '../llm/sglang-client.js';

/**
 * A {@link ChatModel} that plays back a recorded trajectory (the JSON file of
 * `src/leaf/trajectory.ts`, `version: 1`) instead of asking a model server: the demo, tests and
 * bug reports run the whole loop offline and reproduce a recorded run.
 *
 * The k-th answer is the k-th assistant message of `Trajectory.messages`, where k is the number of
 * assistant messages already in the request's history. Choosing by history instead of by a call
 * counter keeps the model stateless, so a retried request gets the same answer again.
 */

const usageSchema = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
});

const toolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const messageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    reasoning_content: z.string().nullish(),
    tool_calls: z.array(toolCallSchema).optional(),
  }),
  z.object({ role: z.literal('tool'), tool_call_id: z.string(), content: z.string() }),
]);

/** The parts of a trajectory file the replay reads; other fields are not checked. */
const replayTrajectorySchema = z.object({
  version: z.literal(1),
  model: z.string(),
  messages: z.array(messageSchema),
  steps: z
    .array(z.object({ usage: usageSchema.nullable().optional() }))
    .optional()
    .default([]),
});

/**
 * Create a replay model.
 *
 * @param trajectory path of a trajectory JSON file (relative paths resolve against the current
 *   directory), or an already parsed trajectory object.
 * @returns a model named `replay:<recorded model>`. Each answer is a fresh copy of the recorded
 *   assistant message; `finishReason` is `tool_calls` when it has tool calls, else `stop`; `usage`
 *   is that of the matching step (same position) when recorded, else `null`.
 * @throws AppError `CONFIG_INVALID` at creation when the file cannot be read, is not JSON, or is
 *   not a version 1 trajectory (the message names the file and the failing field).
 *   `complete` throws `LLM_QUERY_ERROR` "replay exhausted…" when the recording has no further
 *   assistant message, and the signal's reason (`abortReason`: `CANCELLED`…) when it aborted.
 */
export function createReplayModel(trajectory: string | Trajectory): ChatModel {
  const source = typeof trajectory === 'string' ? resolve(trajectory) : 'the given trajectory object';
  const data = typeof trajectory === 'string' ? readTrajectoryFile(source) : trajectory;
  const parsed = replayTrajectorySchema.safeParse(data);
  if (!parsed.success) {
    throw new AppError(
      'CONFIG_INVALID',
      `${typeof trajectory === 'string' ? `Trajectory file ${source}` : 'The trajectory object'} is not a replayable trajectory (version 1): ${z.prettifyError(parsed.error)}`,
    );
  }
  const recorded = parsed.data;
  const answers = recorded.messages.filter(
    (m): m is Extract<typeof m, { role: 'assistant' }> => m.role === 'assistant',
  );

  return {
    model: `replay:${recorded.model}`,
    async complete(request: ChatRequest): Promise<ChatResponse> {
      throwIfAborted(request.signal);
      const position = request.messages.filter((m) => m.role === 'assistant').length;
      const answer = answers[position];
      if (answer === undefined) {
        throw new AppError(
          'LLM_QUERY_ERROR',
          `replay exhausted: ${source} has ${answers.length} assistant message(s) and step ${position + 1} asked for another`,
          { details: { source, recorded: answers.length } },
        );
      }
      const message: AssistantMessage = structuredClone(answer) as AssistantMessage;
      const hasToolCalls = message.tool_calls !== undefined && message.tool_calls.length > 0;
      const usage: Usage | null = recorded.steps[position]?.usage ?? null;
      return { message, finishReason: hasToolCalls ? 'tool_calls' : 'stop', usage: usage && { ...usage } };
    },
  };
}

function readTrajectoryFile(named: string): unknown {
  // A `.json` file that is missing falls back to its journal (`.jsonl`: a run that crashed).
  const candidates = trajectoryFileCandidates(named);
  let path = named;
  let text: string | undefined;
  let firstError: unknown;
  for (const candidate of candidates) {
    try {
      text = readFileSync(candidate, 'utf8');
      path = candidate;
      break;
    } catch (err) {
      firstError ??= err;
    }
  }
  if (text === undefined) {
    throw new AppError(
      'CONFIG_INVALID',
      `Cannot read trajectory file ${named}: ${(firstError as Error).message}`,
      { cause: firstError },
    );
  }
  try {
    return parseTrajectoryText(path, text);
  } catch (err) {
    throw new AppError('CONFIG_INVALID', `Trajectory file ${path} is not JSON: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** The URL scheme that selects the replay model: `replay:<path of a trajectory file>`. */
export const REPLAY_URL_PREFIX = 'replay:';

/**
 * The model for a model URL, as given to `run --model-url` or the worker: `replay:<path>` gives a
 * replay model of that trajectory file; anything else is an SGLang server base URL.
 *
 * @param options SGLang client options without `baseURL` (ignored for replay).
 * @throws AppError `CONFIG_INVALID` for an unreadable trajectory or a URL that is not http(s).
 */
export function createChatModelFromUrl(
  url: string,
  options: Omit<SglangClientOptions, 'baseURL'>,
): ChatModel {
  if (url.startsWith(REPLAY_URL_PREFIX)) {
    const path = url.slice(REPLAY_URL_PREFIX.length);
    if (path === '') {
      throw new AppError(
        'CONFIG_INVALID',
        'The model URL "replay:" needs a trajectory path, e.g. replay:trajectory.json',
      );
    }
    return createReplayModel(path);
  }
  return createSglangClient({ ...options, baseURL: url });
}
