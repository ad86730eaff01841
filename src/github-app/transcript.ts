import { redactSecrets } from '../pipeline/verification/secret-patterns.js';
import { codeSpan, formatCount, formatDuration, pluralize, quoteUntrusted, table } from '../text/markdown.js';

/**
 * The run's transcript in the "FrogNano human review" check run (`output.text`), so reviewers read
 * what the model did where they review: one Markdown section per round ("### Round 1 — job …"), one
 * table row per step, then the final message, exit reason, tokens and time. The whole text stays
 * within GitHub's limit by cutting step rows from the middle with a note naming the command that
 * prints the full trajectory. Everything the model wrote is untrusted: cells are code spans, the
 * final message a quote (text/markdown.ts), and anything shaped like a secret is redacted first.
 */

/**
 * GitHub's cap on a check run's `output.text` (and `output.summary`), in characters
 * (https://docs.github.com/en/rest/checks/runs#create-a-check-run, "Maximum length: 65535").
 */
export const MAX_CHECK_RUN_TEXT_CHARS = 65_535;

/** Characters of a step's arguments and observation shown in its row. */
const MAX_ARGUMENT_CHARS = 80;
const MAX_OBSERVATION_CHARS = 120;
/** Characters of the final message shown. */
const MAX_FINAL_MESSAGE_CHARS = 3_000;

/**
 * The parts of a Leaf trajectory (`leaf/trajectory.ts`, `Trajectory`) the transcript shows. A
 * `Trajectory` fits as it is; declared here because github-app does not import the agent loop's
 * modules.
 */
export interface TranscriptSource {
  jobId: string;
  steps: ReadonlyArray<{
    /** 1-based. */
    index: number;
    toolCalls: ReadonlyArray<{ name: string; arguments: string; observation: string }>;
  }>;
  finalMessage: string | null;
  exitReason: string | null;
  error: string | null;
  totalTokens: { prompt: number; completion: number };
  /** Milliseconds. */
  elapsedMs: number;
}

/** Options of {@link renderTranscriptRound}. */
export interface TranscriptRoundOptions {
  /** 1 for the labelled run, 2… for follow-up runs on the same pull request. */
  round: number;
  /** One line under the heading, written by the bot (trusted), e.g. "Asked for by @alice, who labelled the issue." */
  note?: string;
  /** Largest section, in characters; default {@link MAX_CHECK_RUN_TEXT_CHARS}. */
  maxChars?: number;
}

/**
 * One round's section of the transcript (Markdown). Arguments in short: the path, pattern or the
 * command's first line (≤ 80 characters); observation in short: its first line (≤ 120 characters,
 * `…` when there is more); the exit code of Bash calls. A section longer than `maxChars` loses step
 * rows from the middle, replaced by one row saying how many and how to see them.
 */
export function renderTranscriptRound(t: TranscriptSource, options: TranscriptRoundOptions): string {
  const jobId = t.jobId.replace(/`/g, '');
  const out: string[] = [`### Round ${options.round} — job \`${jobId}\``];
  if (options.note) out.push(options.note);
  if (t.steps.length === 0) out.push('_No steps._');
  else {
    out.push(
      table(
        ['Step', 'Tool', 'Arguments', 'Observation', 'Exit'],
        t.steps.map((step) => stepRow(step)),
        'rlllr',
      ),
    );
  }
  const final = redactSecrets((t.finalMessage ?? '').trim());
  if (final) {
    const shown =
      final.length > MAX_FINAL_MESSAGE_CHARS ? `${final.slice(0, MAX_FINAL_MESSAGE_CHARS)} [… cut]` : final;
    out.push(`Model output, not reviewed — the agent's final message:\n\n${quoteUntrusted(shown)}`);
  } else out.push('_The model ended without a final message._');
  if (t.error) out.push(`Error: ${codeSpan(redactSecrets(t.error), { max: 300 })}`);
  out.push(
    table(
      ['Exit reason', 'Steps', 'Tokens (prompt / completion)', 'Time'],
      [
        [
          `\`${(t.exitReason ?? 'unknown').replace(/`/g, '')}\``,
          formatCount(t.steps.length),
          `${formatCount(t.totalTokens.prompt)} / ${formatCount(t.totalTokens.completion)}`,
          formatDuration(t.elapsedMs),
        ],
      ],
    ),
  );
  out.push(`<sub>The full trajectory: \`frognano-bot trajectory ${jobId}\`.</sub>`);
  return fitSection(out.join('\n\n'), options.maxChars ?? MAX_CHECK_RUN_TEXT_CHARS);
}

/**
 * The transcript with one more round: `previousText` (the sections of earlier rounds, as on the
 * previous head commit's check run; `null` or empty for the first round) followed by `section`.
 * Over `maxChars`, step rows of the oldest rounds are cut first (from their middle, with a note), so
 * the newest round stays whole as long as possible.
 */
export function appendTranscriptRound(
  previousText: string | null,
  section: string,
  maxChars = MAX_CHECK_RUN_TEXT_CHARS,
): string {
  const rounds = [...splitRounds(previousText ?? ''), section];
  let total = rounds.join('\n\n').length;
  for (let i = 0; i < rounds.length && total > maxChars; i++) {
    const round = rounds[i] as string;
    const cut = fitSection(round, Math.max(0, round.length - (total - maxChars)));
    total += cut.length - round.length;
    rounds[i] = cut;
  }
  const text = rounds.join('\n\n');
  return text.length > maxChars ? `${text.slice(0, maxChars - 40)}\n\n[… the transcript was cut]` : text;
}

/** Sections of a transcript text, one per "### Round" heading (text before the first is dropped). */
function splitRounds(text: string): string[] {
  const starts = [...text.matchAll(/^### Round /gm)].map((m) => m.index);
  return starts.map((start, i) => text.slice(start, starts[i + 1] ?? text.length).trim());
}

/** The table row of one step; several tool calls of a step share the row, one per line. */
function stepRow(step: TranscriptSource['steps'][number]): string[] {
  if (step.toolCalls.length === 0) return [String(step.index), '—', '', '_(no tool call: answered)_', ''];
  const calls = step.toolCalls.map((c) => describeCall(c));
  const cell = (pick: (c: CallLine) => string) => calls.map(pick).join('<br>');
  return [
    String(step.index),
    cell((c) => codeSpan(c.tool, { max: 40, table: true })),
    cell((c) => (c.args ? codeSpan(c.args, { max: MAX_ARGUMENT_CHARS, table: true }) : '')),
    cell((c) => (c.observation ? codeSpan(c.observation, { max: MAX_OBSERVATION_CHARS, table: true }) : '')),
    cell((c) => c.exit),
  ];
}

interface CallLine {
  tool: string;
  args: string;
  observation: string;
  exit: string;
}

/** A tool call in short: secrets redacted, arguments reduced to what identifies the call. */
function describeCall(call: { name: string; arguments: string; observation: string }): CallLine {
  const observation = redactSecrets(call.observation);
  const args = shortArguments(redactSecrets(call.arguments));
  if (call.name === 'Bash') {
    const bash =
      /^(?:Exit code: (-?\d+)|(Timed out after [^\n]*))\nSTDOUT:\n([\s\S]*?)\nSTDERR:\n([\s\S]*)$/.exec(
        observation,
      );
    if (bash) {
      const stdout = bash[3] ?? '';
      const stderr = bash[4] ?? '';
      const shown = stdout.trim() ? stdout : stderr.trim() ? `stderr: ${stderr.trimStart()}` : '';
      return { tool: call.name, args, observation: firstLine(shown), exit: bash[1] ?? 'timeout' };
    }
  }
  if (call.name === 'Read' && observation.includes('\n')) {
    // `<path>\n<numbered lines>`: the path is already in the arguments.
    const lines = observation.split('\n').length - 1;
    return { tool: call.name, args, observation: `${formatCount(lines)} lines`, exit: '' };
  }
  return { tool: call.name, args, observation: firstLine(observation), exit: '' };
}

/** The path, pattern or command of a call's JSON arguments; else the arguments as sent. */
function shortArguments(raw: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return firstLine(raw);
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const args = parsed as Record<string, unknown>;
    for (const key of ['command', 'file_path', 'path', 'pattern']) {
      const value = args[key];
      if (typeof value === 'string') return firstLine(value);
    }
  }
  return firstLine(raw);
}

/** The first non-blank line (runs of spaces squeezed), with `… (+N lines)` when more follows. */
function firstLine(text: string): string {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.trim() !== '');
  if (at < 0) return '';
  const more = lines.slice(at + 1).filter((l) => l.trim() !== '').length;
  return `${(lines[at] as string).trim().replace(/\s+/g, ' ')}${more ? ` … (+${pluralize(more, 'line')})` : ''}`;
}

const STEP_ROW = /^\| \d+ \| /;
const NOTE_ROW = /^\| … \| .*?(\d+) steps? cut/;

/**
 * `section` with step rows removed from the middle of its table until it fits `maxChars`, and one
 * row saying how many were cut (an earlier note is merged). A section with no rows left to cut is
 * returned as it is.
 */
function fitSection(section: string, maxChars: number): string {
  if (section.length <= maxChars) return section;
  const lines = section.split('\n');
  const rowAt = lines.map((l, i) => (STEP_ROW.test(l) || NOTE_ROW.test(l) ? i : -1)).filter((i) => i >= 0);
  if (rowAt.length === 0) return section;
  const first = rowAt[0] as number;
  const rows = lines.slice(first, (rowAt[rowAt.length - 1] as number) + 1);
  const noteAt = rows.findIndex((r) => NOTE_ROW.test(r));
  let cut = noteAt >= 0 ? Number(NOTE_ROW.exec(rows[noteAt] as string)?.[1] ?? 0) : 0;
  const before = rows.slice(0, noteAt >= 0 ? noteAt : Math.ceil(rows.length / 2));
  const after = rows.slice(noteAt >= 0 ? noteAt + 1 : before.length);
  const jobId = /^### Round \d+ — job `([^`]*)`/.exec(section)?.[1] ?? '<job id>';
  const note = (n: number) =>
    `| … | | | *${formatCount(n)} ${n === 1 ? 'step' : 'steps'} cut to stay within GitHub's limit; the full trajectory: \`frognano-bot trajectory ${jobId}\`* | |`;
  const rest = [...lines.slice(0, first), ...lines.slice(first + rows.length)].join('\n').length;
  const size = () =>
    rest + [...before, ...after].reduce((s, r) => s + r.length + 1, 0) + note(cut).length + 1;
  while (size() > maxChars && before.length + after.length > 0) {
    if (before.length > after.length) before.pop();
    else after.shift();
    cut++;
  }
  return [...lines.slice(0, first), ...before, note(cut), ...after, ...lines.slice(first + rows.length)].join(
    '\n',
  );
}
