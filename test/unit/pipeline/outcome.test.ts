import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { UnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { BULLMQ_STALLED_REASON, classifyError, classifyQueueFailure } from '../../../src/pipeline/outcome.js';
import { protocolViolation } from '../../../src/sandbox/local/agent-connection.js';

describe('classifyError: sandbox errors', () => {
  it('a broken sandbox protocol is sandbox_failed with cause protocol, not retried', () => {
    const err = protocolViolation('a reply with id 999, which no request waits for');
    expect(err.retryable).toBe(false);
    expect(classifyError(err)).toEqual({
      kind: 'sandbox_failed',
      cause: 'protocol',
      message: 'the sandbox broke its protocol: a reply with id 999, which no request waits for',
      summary: undefined,
    });
  });

  it('other sandbox failures have no cause', () => {
    const outcome = classifyError(new AppError('SANDBOX_GONE', 'the sandbox ended'));
    expect(outcome).toEqual({ kind: 'sandbox_failed', message: 'the sandbox ended', summary: undefined });
  });
});

describe('classifyQueueFailure: jobs the queue gave up on', () => {
  it('a job BullMQ failed for stalling too often is failed WORKER_LOST, not retryable', () => {
    // The error as BullMQ's worker raises it: an UnrecoverableError carrying the deferred failure.
    const err = new UnrecoverableError(`job ${BULLMQ_STALLED_REASON}`);
    expect(classifyQueueFailure(err)).toEqual({
      kind: 'failed',
      code: 'WORKER_LOST',
      message:
        'the worker running this job stopped (crashed, was killed or lost Redis) more times than allowed',
      retryable: false,
    });
  });

  it('the installed BullMQ still writes the stalled reason it is matched on', async () => {
    const dir = join(dirname(createRequire(import.meta.url).resolve('bullmq')), '..', 'esm', 'scripts');
    const name = (await readdir(dir)).find((f) => /^moveStalledJobsToWait-\d+\.js$/.test(f));
    expect(name).toBeDefined();
    expect(await readFile(join(dir, name!), 'utf8')).toContain(`"job ${BULLMQ_STALLED_REASON}"`);
  });

  it('a GitHub API error keeps its status and retryable', () => {
    const err = new AppError('GITHUB_API_ERROR', 'HTTP 502: bad gateway', {
      retryable: true,
      details: { status: 502, pullNumber: 7, pullUrl: 'https://example.test/pull/7' },
    });
    expect(classifyQueueFailure(err)).toEqual({
      kind: 'github_error',
      message: 'HTTP 502: bad gateway',
      status: 502,
      retryable: true,
    });
    const noStatus = new AppError('GITHUB_API_ERROR', 'socket hang up', { retryable: true });
    expect(classifyQueueFailure(noStatus)).toMatchObject({ kind: 'github_error', status: undefined });
  });

  it('any other error is failed with its code, never retryable (the queue stopped retrying)', () => {
    const retryable = new AppError('RETRYABLE_OUTCOME', 'github_error: HTTP 503', { retryable: true });
    expect(classifyQueueFailure(retryable)).toEqual({
      kind: 'failed',
      code: 'RETRYABLE_OUTCOME',
      message: 'github_error: HTTP 503',
      retryable: false,
    });
    expect(classifyQueueFailure(new UnrecoverableError('invalid job data: x'))).toEqual({
      kind: 'failed',
      code: 'INTERNAL',
      message: 'invalid job data: x',
      retryable: false,
    });
    expect(classifyQueueFailure(new TypeError('boom'))).toMatchObject({ code: 'INTERNAL' });
  });
});
