import { appendFile, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ChatMessage } from '../llm/chat-model.js';
import { newTrajectory, type Trajectory, type TrajectoryStep } from '../leaf/trajectory.js';
import type { Logger } from './logger.js';

/**
 * The trajectory journal: while a Leaf loop runs, its trajectory is appended step by step to a
 * JSON Lines file beside the final trajectory file (`trajectory.jsonl` beside `trajectory.json`),
 * so a step costs what it adds, not what the history holds; when the loop ends, the whole
 * trajectory is written once as the JSON file and the journal removed. A crash leaves the journal,
 * which {@link parseTrajectoryJournal} turns back into a trajectory (`exitReason: null`).
 *
 * Lines (each one JSON object):
 * - `{"type":"start", version, jobId, model, startedAt, tools, messages}`: the first messages;
 * - `{"type":"step", step, messages, state}` per step: the step (tool calls without their
 *   observation, which is the content of the matching `tool` message: stored once), the messages
 *   it added, and the running totals;
 * - the last line may be cut short by a crash; it is then ignored.
 */

/** The running totals a step line carries (the trajectory's fields that change). */
type JournalState = Pick<
  Trajectory,
  | 'exitReason'
  | 'error'
  | 'errorCode'
  | 'errorDetails'
  | 'errorRetryable'
  | 'finalMessage'
  | 'contextTokens'
  | 'totalTokens'
  | 'elapsedMs'
>;

/** Path of the journal of the trajectory file `trajectoryPath` (`x.json` → `x.jsonl`). */
export function journalPathFor(trajectoryPath: string): string {
  return trajectoryPath.endsWith('.json') ? `${trajectoryPath}l` : `${trajectoryPath}.jsonl`;
}

/** Writes one trajectory: {@link TrajectoryJournal.append} after each step, `finish` at the end. */
export interface TrajectoryJournal {
  /** Append what the trajectory gained since the last call (its new steps and messages). */
  append(trajectory: Trajectory): Promise<void>;
  /** Write the whole trajectory as the JSON file (temp file + rename), then remove the journal. */
  finish(trajectory: Trajectory): Promise<void>;
}

/**
 * A journal for the trajectory file `path`. Write errors are logged, never thrown: a trajectory
 * that cannot be written must not end the run.
 */
export function createTrajectoryJournal(path: string, logger: Logger): TrajectoryJournal {
  const journal = journalPathFor(path);
  let messagesWritten = 0;
  let stepsWritten = 0;
  let started = false;

  const lines = (t: Trajectory): string => {
    const out: string[] = [];
    if (!started) {
      // The start line holds the messages before the first step (system prompt and instruction).
      const first = t.steps.length === 0 ? t.messages.length : firstStepMessage(t);
      out.push(
        JSON.stringify({
          type: 'start',
          version: t.version,
          jobId: t.jobId,
          model: t.model,
          startedAt: t.startedAt,
          tools: t.tools,
          messages: t.messages.slice(0, first),
        }),
      );
      messagesWritten = first;
    }
    const newSteps = t.steps.slice(stepsWritten);
    newSteps.forEach((step, i) => {
      // Messages go with the last new step (a step line per step, in order).
      const messages = i === newSteps.length - 1 ? t.messages.slice(messagesWritten) : [];
      out.push(
        JSON.stringify({ type: 'step', step: withoutObservations(step), messages, state: stateOf(t) }),
      );
    });
    if (newSteps.length > 0) messagesWritten = t.messages.length;
    stepsWritten = t.steps.length;
    return out.length > 0 ? `${out.join('\n')}\n` : '';
  };

  return {
    async append(trajectory) {
      try {
        if (!started) await mkdir(dirname(journal), { recursive: true });
        const text = lines(trajectory);
        if (!started) await writeFile(journal, text);
        else if (text !== '') await appendFile(journal, text);
        started = true;
      } catch (err) {
        logger.error({ err, path: journal }, 'could not append to the trajectory journal');
      }
    },
    async finish(trajectory) {
      try {
        await mkdir(dirname(path), { recursive: true });
        const tmp = `${path}.${process.pid}.tmp`;
        await writeFile(tmp, JSON.stringify(trajectory, null, 1));
        await rename(tmp, path);
        await rm(journal, { force: true });
      } catch (err) {
        logger.error({ err, path }, 'could not write the trajectory');
      }
    },
  };
}

/** Index of the first message a step added: the first assistant message. */
function firstStepMessage(t: Trajectory): number {
  const i = t.messages.findIndex((m) => m.role === 'assistant');
  return i === -1 ? t.messages.length : i;
}

function stateOf(t: Trajectory): JournalState {
  const state: JournalState = {
    exitReason: t.exitReason,
    error: t.error,
    finalMessage: t.finalMessage,
    contextTokens: t.contextTokens,
    totalTokens: { ...t.totalTokens },
    elapsedMs: t.elapsedMs,
  };
  if (t.errorCode !== undefined) state.errorCode = t.errorCode;
  if (t.errorDetails !== undefined) state.errorDetails = t.errorDetails;
  if (t.errorRetryable !== undefined) state.errorRetryable = t.errorRetryable;
  return state;
}

function withoutObservations(step: TrajectoryStep): unknown {
  return { ...step, toolCalls: step.toolCalls.map(({ observation: _o, ...rest }) => rest) };
}

/**
 * Rebuild a trajectory from journal text (see the module comment). The result has the shape of
 * the JSON file, `patch: null`, and each tool call's observation taken from its `tool` message
 * (the step's tool messages in order).
 *
 * @throws Error naming the line when a line other than the last is not a journal line, or when
 *   there is no start line.
 */
export function parseTrajectoryJournal(text: string): Trajectory {
  const rows = text.split('\n').filter((l) => l.trim() !== '');
  let trajectory: Trajectory | undefined;
  rows.forEach((row, i) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(row) as Record<string, unknown>;
    } catch (err) {
      if (i === rows.length - 1) return; // cut short by a crash
      throw new Error(`line ${i + 1} is not JSON: ${(err as Error).message}`, { cause: err });
    }
    if (entry.type === 'start') {
      trajectory = newTrajectory({
        jobId: String(entry.jobId),
        model: String(entry.model),
        startedAt: String(entry.startedAt),
        messages: [...((entry.messages as ChatMessage[] | undefined) ?? [])],
        tools: (entry.tools as unknown[] | undefined) ?? [],
      });
    } else if (entry.type === 'step' && trajectory) {
      const messages = (entry.messages as ChatMessage[] | undefined) ?? [];
      const step = entry.step as TrajectoryStep;
      // The step's tool messages are its tool calls' observations, in order (ids may repeat).
      const results = messages.filter((m) => m.role === 'tool');
      step.toolCalls.forEach((call, k) => {
        call.observation = results[k]?.content ?? '';
      });
      trajectory.messages.push(...messages);
      trajectory.steps.push(step);
      Object.assign(trajectory, entry.state as JournalState);
    } else {
      throw new Error(`line ${i + 1} is not a trajectory journal line (type ${JSON.stringify(entry.type)})`);
    }
  });
  if (!trajectory) throw new Error('no start line: not a trajectory journal');
  return trajectory;
}

/**
 * Parse the text of a trajectory file: a journal when `path` ends with `.jsonl`, else JSON.
 *
 * @throws Error (JSON or journal syntax) with the reason; the caller names the file.
 */
export function parseTrajectoryText(path: string, text: string): unknown {
  return path.endsWith('.jsonl') ? parseTrajectoryJournal(text) : (JSON.parse(text) as unknown);
}

/**
 * The files to try, in order, for a trajectory named `path`: a `.json` file, then its journal (a
 * run still going, or one that crashed); a `.jsonl` path as is.
 */
export function trajectoryFileCandidates(path: string): string[] {
  return path.endsWith('.json') ? [path, journalPathFor(path)] : [path];
}
