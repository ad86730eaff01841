import { abortReason, AppError, isAppError } from '../app-error.js';
import type { AssistantMessage, ChatMessage, ChatModel, ChatResponse } from '../llm/chat-model.js';
import { createSilentLogger, type Logger } from '../observability/logger.js';
import { createTrajectoryJournal } from '../observability/trajectory-journal.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { LEAF_PROTOCOL } from '../protocol/protocol.js';
import {
  executeTool,
  parseToolArguments,
  readLeafToolSettings,
  type LeafToolSettings,
} from './tools/index.js';
import {
  newTrajectory,
  recordLoopError,
  type ExitReason,
  type Trajectory,
  type TrajectoryStep,
  type TrajectoryToolCall,
} from './trajectory.js';
import { computeWorkspacePatch, readBaseCommit } from './workspace-patch.js';

/** Limits of one trajectory. Defaults: `LEAF_PROTOCOL.limits` (the evaluated FrogNano setup). */
export interface AgentLimits {
  /** Model requests per trajectory; default 150. */
  maxSteps: number;
  /** Wall-clock limit in milliseconds; default 10 800 000 (10 800 s). */
  maxTimeMs: number;
  /** Context cap in tokens (prompt + completion of the last step, from usage); default 131 072. */
  maxContextTokens: number;
}

/** Options of {@link runAgentLoop}. */
export interface AgentLoopOptions {
  model: ChatModel;
  sandbox: Sandbox;
  /** The user message: the task (e.g. the issue, quoted as data). */
  instruction: string;
  /** Job id, recorded in the trajectory. */
  jobId: string;
  limits?: Partial<AgentLimits>;
  /** Output caps of the tools; default from the `LEAF_*` variables of this process. */
  toolSettings?: LeafToolSettings;
  /** Aborting ends the loop as `cancelled` (the current request and tool call are aborted). */
  signal?: AbortSignal;
  logger?: Logger;
  /**
   * Where to write the trajectory JSON when the loop ends (atomically: temp file + rename); while
   * it runs, each step is appended to the journal beside it (`<name>.jsonl`, see
   * observability/trajectory-journal.ts), removed once the JSON file is written.
   */
  trajectoryPath?: string;
  /** Called after every step (after the trajectory was written). Errors thrown here end the loop. */
  onStep?: (step: TrajectoryStep, trajectory: Trajectory) => void | Promise<void>;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * Run the Leaf agent loop: messages start as `[system, user]`; one model request per step; the tool
 * calls of a step run in order, one `tool` message each; the loop ends with one of the
 * {@link ExitReason}s. History is append-only — every request's messages begin with the previous
 * request's messages — so SGLang's radix prefix cache hits on every turn.
 *
 * Never throws for model, tool or limit problems: they end the loop with an exit reason and the
 * error, kept whole (`errorCode`, `errorDetails`: read it back with `loopFailure`). A cancelled
 * loop records its signal's reason (an AppError `CANCELLED` names who cancelled), one out of time
 * a `TIMED_OUT`; a model or tool failure that is no AppError becomes `LLM_QUERY_ERROR` or
 * `TOOL_ERROR`.
 * After the loop, `patch` is the workspace's `git diff --binary` against the commit it started from
 * (`null` when the workspace is not a git repository or the sandbox is gone).
 *
 * @returns the final trajectory (also written to `trajectoryPath`).
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<Trajectory> {
  const { model, sandbox, signal } = options;
  const logger = options.logger ?? createSilentLogger();
  const now = options.now ?? Date.now;
  const limits: AgentLimits = {
    maxSteps: options.limits?.maxSteps ?? LEAF_PROTOCOL.limits.max_steps,
    maxTimeMs: options.limits?.maxTimeMs ?? LEAF_PROTOCOL.limits.max_total_time_sec * 1000,
    maxContextTokens: options.limits?.maxContextTokens ?? LEAF_PROTOCOL.limits.max_context_tokens,
  };
  const settings = options.toolSettings ?? readLeafToolSettings(process.env);
  const started = now();
  const messages: ChatMessage[] = [
    { role: 'system', content: LEAF_PROTOCOL.system_prompt },
    { role: 'user', content: options.instruction },
  ];
  const trajectory: Trajectory = newTrajectory({
    jobId: options.jobId,
    model: model.model,
    startedAt: new Date(started).toISOString(),
    messages,
    tools: LEAF_PROTOCOL.tools,
  });

  // Appended after every step (a step's cost does not grow with the history), written whole at
  // the end; a crash leaves the journal, which the trajectory readers accept.
  const journal = options.trajectoryPath
    ? createTrajectoryJournal(options.trajectoryPath, logger)
    : undefined;

  let baseCommit: string | null = null;
  try {
    baseCommit = await readBaseCommit(sandbox, signal);
  } catch (err) {
    logger.warn({ err }, 'could not read the base commit; no patch will be computed');
  }

  // The wall-clock limit also aborts a request or tool call in flight, so a hung model server or a
  // command cannot hold the loop past max_time.
  const timeLimit = new AbortController();
  const timer = setTimeout(
    () => timeLimit.abort(new AppError('TIMED_OUT', 'max_time reached')),
    Math.max(0, limits.maxTimeMs),
  );
  const stepSignal = signal ? AbortSignal.any([signal, timeLimit.signal]) : timeLimit.signal;

  const finish = (reason: ExitReason, error?: AppError): void => {
    trajectory.exitReason = reason;
    if (error) recordLoopError(trajectory, error);
  };
  const interrupted = (): boolean => {
    if (signal?.aborted) finish('cancelled', abortReason(signal));
    else if (timeLimit.signal.aborted || now() - started >= limits.maxTimeMs) {
      const limit = `${limits.maxTimeMs / 1000} s`;
      finish(
        'max_time',
        new AppError('TIMED_OUT', `the model did not finish within the time limit of ${limit}`),
      );
    } else return false;
    return true;
  };

  try {
    for (;;) {
      if (interrupted()) break;
      if (trajectory.steps.length >= limits.maxSteps) {
        finish('max_turns');
        break;
      }
      const index = trajectory.steps.length + 1;
      const stepStarted = now();
      let response: ChatResponse;
      try {
        response = await model.complete({ messages, tools: LEAF_PROTOCOL.tools, signal: stepSignal });
      } catch (err) {
        if (interrupted()) break;
        const failure = asAppError(err, 'LLM_QUERY_ERROR');
        finish(failure.code === 'LLM_CONTEXT_OVERFLOW' ? 'max_context_len' : 'llm_query_error', failure);
        break;
      }
      const llmMs = now() - stepStarted;
      const message = normaliseAssistant(response.message);
      messages.push(message);
      const step: TrajectoryStep = {
        index,
        startedAt: new Date(stepStarted).toISOString(),
        llmMs,
        toolMs: 0,
        finishReason: response.finishReason,
        usage: response.usage,
        toolCalls: [],
      };
      if (response.recoveredToolCalls) step.recoveredToolCalls = true;
      trajectory.steps.push(step);
      if (response.usage) {
        trajectory.totalTokens.prompt += response.usage.prompt_tokens;
        trajectory.totalTokens.completion += response.usage.completion_tokens;
        trajectory.contextTokens = response.usage.prompt_tokens + response.usage.completion_tokens;
      }
      logger.debug({ step: index, finishReason: response.finishReason, usage: response.usage }, 'model step');

      const calls = message.tool_calls ?? [];
      if (response.finishReason === 'length') {
        // The completion was cut at the per-turn cap: its tool calls (if any) may be truncated JSON.
        finish('max_tokens_per_turn');
      } else if (calls.length === 0) {
        trajectory.finalMessage = message.content ?? '';
        finish('agent');
      } else {
        const toolsStarted = now();
        for (const call of calls) {
          if (interrupted()) break;
          const callStarted = now();
          let observation: string;
          try {
            observation = await executeTool(call.function.name, parseToolArguments(call.function.arguments), {
              sandbox,
              settings,
              signal: stepSignal,
            });
          } catch (err) {
            if (interrupted()) break;
            finish('tool_error', asAppError(err, 'TOOL_ERROR'));
            break;
          }
          messages.push({ role: 'tool', tool_call_id: call.id, content: observation });
          const record: TrajectoryToolCall = {
            id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
            observation,
            durationMs: now() - callStarted,
          };
          step.toolCalls.push(record);
        }
        step.toolMs = now() - toolsStarted;
        if (trajectory.exitReason === null && trajectory.contextTokens >= limits.maxContextTokens) {
          finish('max_context_len');
        }
      }
      trajectory.elapsedMs = now() - started;
      await journal?.append(trajectory);
      await options.onStep?.(step, trajectory);
      if (trajectory.exitReason !== null) break;
    }
  } finally {
    clearTimeout(timer);
  }

  if (baseCommit !== null) {
    try {
      // Not bound to the caller's signal: a cancelled run still reports what it changed.
      trajectory.patch = await computeWorkspacePatch(sandbox, baseCommit);
    } catch (err) {
      logger.warn({ err }, 'could not compute the patch');
    }
  }
  trajectory.elapsedMs = now() - started;
  await journal?.finish(trajectory);
  logger.info(
    { exitReason: trajectory.exitReason, steps: trajectory.steps.length, elapsedMs: trajectory.elapsedMs },
    'agent loop ended',
  );
  return trajectory;
}

/**
 * Keep exactly what the server sent (content, reasoning_content, tool_calls) so the next request's
 * prefix matches what the server tokenised; drop empty tool_calls arrays, which some chat templates
 * render differently from an absent field.
 */
function normaliseAssistant(message: AssistantMessage): AssistantMessage {
  const out: AssistantMessage = { role: 'assistant', content: message.content ?? null };
  if (message.reasoning_content !== undefined && message.reasoning_content !== null) {
    out.reasoning_content = message.reasoning_content;
  }
  if (message.tool_calls && message.tool_calls.length > 0) out.tool_calls = message.tool_calls;
  return out;
}

/** `err` when it is an AppError, else an AppError `code` with its message, `err` as the cause. */
function asAppError(err: unknown, code: 'LLM_QUERY_ERROR' | 'TOOL_ERROR'): AppError {
  if (isAppError(err)) return err;
  return new AppError(code, err instanceof Error ? err.message : String(err), { cause: err });
}
