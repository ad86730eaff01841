import { describe, expect, it } from 'vitest';
import { isRetryableHttpStatus } from '../../src/app-error.js';

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
