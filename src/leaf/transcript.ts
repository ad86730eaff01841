import type { Trajectory } from './trajectory.js';

/**
 * Render a trajectory as a readable transcript: the task, then each step with the model's reasoning
 * and text (cut), its tool calls and their observations cut to `maxObservationLines` lines, then the
 * exit reason. Plain text, for terminals and logs.
 */
export function formatTranscript(t: Trajectory, options: { maxObservationLines?: number } = {}): string {
  const maxLines = options.maxObservationLines ?? 6;
  const cut = (text: string, lines: number): string => {
    const all = text.split('\n');
    if (all.length <= lines) return all.join('\n');
    return `${all.slice(0, lines).join('\n')}\n… (${all.length - lines} more lines)`;
  };
  const indent = (text: string, pad = '    '): string => text.replace(/^/gm, pad);
  const out: string[] = [];
  out.push(`job ${t.jobId} · model ${t.model} · started ${t.startedAt}`);
  const user = t.messages.find((m) => m.role === 'user');
  if (user) out.push('', 'task:', indent(cut(user.content, 12)));
  const assistants = t.messages.filter((m) => m.role === 'assistant');
  t.steps.forEach((step, i) => {
    const msg = assistants[i];
    const usage = step.usage ? ` · ${step.usage.prompt_tokens}+${step.usage.completion_tokens} tokens` : '';
    out.push(
      '',
      `── step ${step.index} · ${(step.llmMs / 1000).toFixed(1)}s model, ${(step.toolMs / 1000).toFixed(1)}s tools${usage}`,
    );
    if (msg && msg.role === 'assistant') {
      if (msg.reasoning_content) out.push(indent(`(thinking) ${cut(msg.reasoning_content, 3)}`));
      if (msg.content) out.push(indent(cut(msg.content, 8)));
    }
    for (const call of step.toolCalls) {
      out.push(
        `  → ${call.name} ${call.arguments.length > 200 ? `${call.arguments.slice(0, 197)}...` : call.arguments}`,
      );
      out.push(indent(cut(call.observation, maxLines)));
    }
  });
  out.push(
    '',
    `exit reason: ${t.exitReason ?? '(still running)'}${t.error ? ` — ${t.error}` : ''}`,
    `steps: ${t.steps.length} · tokens: ${t.totalTokens.prompt} prompt, ${t.totalTokens.completion} completion · time: ${(t.elapsedMs / 1000).toFixed(1)}s`,
  );
  return `${out.join('\n')}\n`;
}
