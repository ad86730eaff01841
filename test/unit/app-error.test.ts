import { describe, expect, it } from 'vitest';
import {
  abortReason,
  AppError,
  httpStatusOf,
  isRetryableHttpStatus,
  throwIfAborted,
} from '../../src/app-error.js';

describe('isRetryableHttpStatus', () => {
  it('retries server errors and rate limits', () => {
    for (const status of [500, 502, 503, 504, 599, 429]) expect(isRetryableHttpStatus(status)).toBe(true);
  });

  it('does not retry other client errors, redirects or successes', () => {
    for (const status of [400, 401, 403, 404, 408, 409, 422, 428, 430, 499, 304, 200]) {
      expect(isRetryableHttpStatus(status)).toBe(false);
    }
  });

  it('retries a call that got no response at all (a network error has no status)', () => {
    expect(isRetryableHttpStatus(undefined)).toBe(true);
  });
});

describe('AppError codes and details', () => {
  it('takes only codes of ErrorCode and details of that code (checked by the typecheck)', () => {
    // @ts-expect-error: not an ErrorCode
    const unknown = new AppError('NOT_A_CODE', 'x');
    // @ts-expect-error: CANCELLED's details are { by }
    const wrong = new AppError('CANCELLED', 'x', { details: { status: 500 } });
    // @ts-expect-error: TIMED_OUT has no details
    const none = new AppError('TIMED_OUT', 'x', { details: { by: null } });
    expect([unknown, wrong, none].every((e) => e instanceof AppError)).toBe(true);
  });
});

describe('abortReason and throwIfAborted: cancellation carried by the signal', () => {
  it('return the AppError the signal was aborted with, as it is', () => {
    const controller = new AbortController();
    const reason = new AppError('CANCELLED', 'the issue was closed', { details: { by: 'erin' } });
    controller.abort(reason);
    expect(abortReason(controller.signal)).toBe(reason);
    expect(() => throwIfAborted(controller.signal)).toThrow(reason);
  });

  it('make any other reason a CANCELLED by no one, with the reason as its cause', () => {
    const controller = new AbortController();
    controller.abort();
    const err = abortReason(controller.signal);
    expect(err).toMatchObject({ code: 'CANCELLED', details: { by: null }, message: 'the job was cancelled' });
    expect((err.cause as Error).name).toBe('AbortError');
  });

  it('throwIfAborted does nothing for a live signal or none', () => {
    expect(() => throwIfAborted(new AbortController().signal)).not.toThrow();
    expect(() => throwIfAborted(undefined)).not.toThrow();
  });
});

describe('httpStatusOf', () => {
  it('reads a numeric status (Octokit), nothing else', () => {
    expect(httpStatusOf(Object.assign(new Error('x'), { status: 404 }))).toBe(404);
    expect(httpStatusOf(Object.assign(new Error('x'), { status: '404' }))).toBeUndefined();
    expect(httpStatusOf(null)).toBeUndefined();
  });
});
