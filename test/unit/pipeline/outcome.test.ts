import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/app-error.js';
import { classifyError } from '../../../src/pipeline/outcome.js';
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
