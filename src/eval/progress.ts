import { formatDuration } from '../text/markdown.js';

/** Where progress goes: `process.stderr` or a test's fake. */
export interface ProgressStream {
  isTTY?: boolean;
  /** Terminal width in characters (TTY only). */
  columns?: number;
  write(text: string): unknown;
}

/** A task that finished (or was skipped because an earlier run with the same `--out` finished it). */
export interface ProgressEvent {
  instanceId: string;
  resolved: boolean;
  /** Why not resolved, or an error; shown in plain mode. */
  note?: string | null;
}

/** The progress display of `eval run`. */
export interface Progress {
  /** Count a task that finished in this run. */
  finished(event: ProgressEvent): void;
  /** Count tasks finished by an earlier run (not part of the ETA). */
  skipped(count: number, resolved: number): void;
  /** End the display (a TTY gets its final line and a newline). */
  done(): void;
}

/**
 * Progress of an evaluation: on a TTY one line rewritten in place (a bar, tasks done/total,
 * resolved so far, ETA); elsewhere (CI logs, a file) one plain line per finished task.
 *
 * The ETA is the wall-clock time per task finished in this run so far, times the tasks left, so it
 * accounts for concurrency.
 *
 * @param now the clock, milliseconds (injected for tests).
 */
export function createProgress(
  stream: ProgressStream,
  total: number,
  now: () => number = Date.now,
): Progress {
  const started = now();
  let done = 0;
  let doneHere = 0;
  let resolved = 0;
  const tty = stream.isTTY === true;
  const eta = (): string => {
    const left = total - done;
    if (left <= 0) return 'done';
    if (doneHere === 0) return 'ETA unknown';
    return `ETA ${formatDuration(((now() - started) / doneHere) * left)}`;
  };
  const status = (): string => `${done}/${total} tasks, ${resolved} resolved, ${eta()}`;
  const drawBar = (): void => {
    const text = status();
    const width = Math.max(10, Math.min(40, (stream.columns ?? 80) - text.length - 4));
    const filled = total === 0 ? width : Math.round((done / total) * width);
    stream.write(`\r\x1b[2K[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${text}`);
  };
  return {
    finished(event) {
      done++;
      doneHere++;
      if (event.resolved) resolved++;
      if (tty) return drawBar();
      const what = event.resolved ? 'resolved' : `not resolved${event.note ? ` (${event.note})` : ''}`;
      stream.write(
        `[${done}/${total}] ${event.instanceId}: ${what}; ${resolved} resolved so far, ${eta()}\n`,
      );
    },
    skipped(count, alreadyResolved) {
      if (count === 0) return;
      done += count;
      resolved += alreadyResolved;
      if (tty) return drawBar();
      stream.write(
        `[${done}/${total}] ${count} task${count === 1 ? '' : 's'} already finished in this folder, skipped\n`,
      );
    },
    done() {
      if (tty) {
        drawBar();
        stream.write('\n');
      }
    },
  };
}
