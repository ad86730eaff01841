import { describe, expect, it } from 'vitest';
import { appKeys, issueKey, makeJobId } from '../../../src/queue/queue-keys.js';

describe('makeJobId', () => {
  const ref = { owner: 'Octo-Org', repo: 'My.Repo', issueNumber: 12 };

  it('is stable per delivery, case-folded, and different for a new delivery', () => {
    const id = makeJobId(ref, '72d3162e-cc78-11e3-81ab-4c9367dc0958');
    expect(id).toBe('octo-org.my.repo.12.72d3162e-cc78-11e3-81ab-4c9367dc0958');
    expect(makeJobId({ ...ref, owner: 'octo-org' }, '72d3162e-cc78-11e3-81ab-4c9367dc0958')).toBe(id);
    expect(makeJobId(ref, 'another')).not.toBe(id);
  });

  it('never contains ":" and is never digits only (BullMQ refuses both)', () => {
    for (const delivery of ['1', 'a:b', '12:34:56', '']) {
      const id = makeJobId({ owner: '1', repo: '2', issueNumber: 3 }, delivery);
      expect(id).not.toContain(':');
      expect(id).not.toMatch(/^\d+$/);
    }
  });
});

describe('keys', () => {
  it('keeps app keys under the prefix, apart from BullMQ keys', () => {
    const keys = appKeys('frognano');
    expect(keys.guard(issueKey({ owner: 'A', repo: 'B', issueNumber: 1 }))).toBe('frognano:app:issue:a/b#1');
    expect(keys.delivery('d')).toBe('frognano:app:delivery:d');
    expect(keys.cancel('j')).toBe('frognano:app:cancel:j');
    expect(keys.cancelChannel).toBe('frognano:app:cancel-requests');
  });
});
