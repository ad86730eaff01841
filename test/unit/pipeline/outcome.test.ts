import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { UnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { abortReason, AppError, isAppError } from '../../../src/app-error.js';
import {
  BULLMQ_STALLED_REASON,
  classifyError,
  classifyQueueFailure,
  type RunSummary,
} from '../../../src/pipeline/outcome.js';
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

describe('classifyError: one outcome kind per code', () => {
  const summary: RunSummary = {
    jobId: 'o.r.1.d',
    exitReason: 'llm_query_error',
    steps: 2,
    maxSteps: 150,
    promptTokens: 10,
    completionTokens: 5,
    elapsedMs: 1000,
    finalMessage: null,
  };

  it("cancelled: who cancelled comes from the error's details, then from the deprecated option", () => {
    const err = new AppError('CANCELLED', 'the frognano label was removed', { details: { by: 'carol' } });
    expect(classifyError(err, { summary })).toEqual({
      kind: 'cancelled',
      by: 'carol',
      reason: 'the frognano label was removed',
      summary,
    });
    const shutdown = new AppError('CANCELLED', 'the worker is shutting down', { details: { by: null } });
    expect(classifyError(shutdown)).toMatchObject({ kind: 'cancelled', by: null });
    const bare = new AppError('CANCELLED', 'cancelled while the tests ran');
    expect(classifyError(bare)).toMatchObject({ kind: 'cancelled', by: null });
  });

  it('cancelled: a signal aborted without a reason (a DOMException AbortError) is cancelled by no one', () => {
    const controller = new AbortController();
    controller.abort();
    expect(classifyError(controller.signal.reason)).toEqual({
      kind: 'cancelled',
      by: null,
      reason: 'the job was cancelled',
      summary: undefined,
    });
    expect(classifyError(abortReason(controller.signal))).toMatchObject({ kind: 'cancelled', by: null });
  });

  it('llm_unreachable: no server, or one that answered with errors (its status from the details)', () => {
    const none = new AppError('LLM_UNREACHABLE', 'No model server answered', {
      retryable: true,
      details: { baseURL: 'http://127.0.0.1:1/v1', attempts: 4 },
    });
    expect(classifyError(none, { summary })).toEqual({
      kind: 'llm_unreachable',
      message: 'No model server answered',
      summary,
    });
    const failing = new AppError('LLM_QUERY_ERROR', 'the server failed', {
      details: { baseURL: 'http://127.0.0.1:1/v1', status: 502 },
    });
    expect(classifyError(failing)).toMatchObject({ kind: 'llm_unreachable', status: 502 });
    const replay = new AppError('LLM_QUERY_ERROR', 'replay exhausted', {
      details: { source: 't.json', recorded: 3 },
    });
    expect(classifyError(replay)).not.toHaveProperty('status');
  });

  it('timed_out', () => {
    expect(classifyError(new AppError('TIMED_OUT', 'the time limit of 60 s'), { summary })).toEqual({
      kind: 'timed_out',
      message: 'the time limit of 60 s',
      summary,
    });
  });

  it('refused: an invalid configuration lists its messages; a refused push has none', () => {
    const config = new AppError('CONFIG_INVALID', 'invalid configuration in .frognano.yml', {
      details: { source: '.frognano.yml', messages: ['maxSteps: must be a number'] },
    });
    expect(classifyError(config)).toEqual({
      kind: 'refused',
      reason: 'invalid configuration in .frognano.yml',
      details: ['maxSteps: must be a number'],
    });
    const push = new AppError('POLICY_REFUSED', 'refusing to push to main', { details: { branch: 'main' } });
    expect(classifyError(push)).toEqual({
      kind: 'refused',
      reason: 'refusing to push to main',
      details: undefined,
    });
  });

  it("github_error: status, retryable and the pull request when it existed; Octokit's HttpError too", () => {
    const err = new AppError('GITHUB_API_ERROR', 'the check run could not be created', {
      retryable: true,
      details: { status: 502, pullNumber: 7, pullUrl: 'https://ghe.test/o/r/pull/7' },
    });
    expect(classifyError(err)).toEqual({
      kind: 'github_error',
      message: 'the check run could not be created',
      status: 502,
      retryable: true,
      pullRequest: { number: 7, url: 'https://ghe.test/o/r/pull/7' },
    });
    const octokit = Object.assign(new Error('Not Found'), { name: 'HttpError', status: 404 });
    expect(classifyError(octokit)).toEqual({
      kind: 'github_error',
      message: 'Not Found',
      status: 404,
      retryable: false,
    });
  });

  it('failed: a code without an outcome of its own keeps its code; anything else is INTERNAL', () => {
    const git = new AppError('GIT_FAILED', 'git apply failed', {
      details: { args: ['apply'], exitCode: 1, stderr: 'corrupt patch' },
    });
    expect(classifyError(git, { summary })).toEqual({
      kind: 'failed',
      code: 'GIT_FAILED',
      message: 'git apply failed',
      retryable: false,
      summary,
    });
    expect(classifyError(new RangeError('boom'))).toEqual({
      kind: 'failed',
      code: 'INTERNAL',
      message: 'boom',
      retryable: false,
      summary: undefined,
    });
  });

  it('isAppError narrows to the code asked for', () => {
    const err: unknown = new AppError('EGRESS_NOT_BLOCKED', 'reached', {
      details: { reached: ['10.0.0.1:443'], driver: 'local' },
    });
    expect(isAppError(err, 'EGRESS_NOT_BLOCKED') && err.details?.reached).toEqual(['10.0.0.1:443']);
    expect(isAppError(err, 'CANCELLED')).toBe(false);
    expect(classifyError(err)).toMatchObject({ kind: 'sandbox_failed' });
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
