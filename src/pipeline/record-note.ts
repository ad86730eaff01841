/**
 * Whether a job's run record is stored, attached to its outcome by the worker (`record`) so the
 * status comment can say where to get it, or that it is pending. `stored`: in the record store and
 * chained; `pending`: the store was unavailable, the record waits in the worker's spool and is
 * stored when the store is back.
 */
export interface RecordNote {
  state: 'stored' | 'pending';
  jobId: string;
}

/** The status comment's line about the record. */
export function recordNoteLine(note: RecordNote): string {
  const id = note.jobId.replace(/`/g, '');
  return note.state === 'stored'
    ? `Run record: \`frognano-bot audit show ${id}\``
    : `Run record: **pending** — the record store is unavailable; the record is kept and stored when it is back (then \`frognano-bot audit show ${id}\`)`;
}

/** The record note of an outcome the worker returned, if any. */
export function recordNoteOf(outcome: object): RecordNote | null {
  const note = (outcome as { record?: unknown }).record as RecordNote | undefined;
  return note && (note.state === 'stored' || note.state === 'pending') && typeof note.jobId === 'string'
    ? note
    : null;
}
