import { describe, expect, it } from 'vitest';
import {
  canTrigger,
  evaluateLabeled,
  issuesPayloadSchema,
  type IssuesPayload,
} from '../../../src/github-app/trigger-rules.js';

function payload(overrides: Partial<IssuesPayload> = {}): IssuesPayload {
  return issuesPayloadSchema.parse({
    action: 'labeled',
    label: { name: 'frognano' },
    issue: { number: 3, state: 'open', title: 't' },
    repository: { name: 'r', owner: { login: 'o' } },
    sender: { login: 'alice', type: 'User', id: 1 },
    installation: { id: 7 },
    ...overrides,
  });
}

describe('evaluateLabeled', () => {
  const opts = { triggerLabel: 'frognano', botLogin: 'frognano[bot]' };

  it('accepts the trigger label (any case) on an open issue by a person', () => {
    expect(evaluateLabeled(payload(), opts)).toEqual({ action: 'check_permission' });
    expect(evaluateLabeled(payload({ label: { name: 'FrogNano' } }), opts)).toEqual({
      action: 'check_permission',
    });
  });

  it('ignores other labels and every bot, the app included, without a comment', () => {
    expect(evaluateLabeled(payload({ label: { name: 'bug' } }), opts).action).toBe('ignore');
    expect(evaluateLabeled(payload({ sender: { login: 'frognano[bot]', type: 'Bot' } }), opts).action).toBe(
      'ignore',
    );
    expect(evaluateLabeled(payload({ sender: { login: 'renovate[bot]', type: 'Bot' } }), opts).action).toBe(
      'ignore',
    );
    expect(evaluateLabeled(payload({ sender: { login: 'frognano[bot]' } }), opts).action).toBe('ignore');
  });

  it('refuses pull requests and closed issues with a reason', () => {
    const pr = evaluateLabeled(
      payload({ issue: { number: 3, state: 'open', title: 't', pull_request: { url: 'x' } } }),
      opts,
    );
    expect(pr).toEqual({ action: 'refuse', reason: 'FrogNano works on issues, not on pull requests.' });
    const closed = evaluateLabeled(payload({ issue: { number: 3, state: 'closed', title: 't' } }), opts);
    expect(closed.action).toBe('refuse');
  });
});

describe('canTrigger', () => {
  it('allows write, maintain and admin only', () => {
    expect(canTrigger({ permission: 'admin', roleName: 'admin' })).toBe(true);
    expect(canTrigger({ permission: 'write', roleName: 'maintain' })).toBe(true);
    expect(canTrigger({ permission: 'write', roleName: 'write' })).toBe(true);
    expect(canTrigger({ permission: 'write', roleName: null })).toBe(true);
    expect(canTrigger({ permission: 'read', roleName: 'triage' })).toBe(false);
    expect(canTrigger({ permission: 'read', roleName: 'read' })).toBe(false);
    expect(canTrigger({ permission: 'none', roleName: null })).toBe(false);
  });
});
