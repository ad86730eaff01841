import { describe, expect, it } from 'vitest';
import { buildCommitMessage, noreplyEmail } from '../../../src/pipeline/publish-change.js';
import { tail, TEST_TAIL_LINES } from '../../../src/pipeline/run-tests.js';

describe('buildCommitMessage', () => {
  it('has the title as subject and the Co-authored-by trailer last', () => {
    const message = buildCommitMessage({
      issueTitle: 'add()\nsubtracts',
      issueNumber: 7,
      jobId: 'o.r.7.d',
      coAuthors: [{ login: 'alice', email: '5+alice@users.noreply.ghe.example' }],
    });
    expect(message).toBe(
      'add() subtracts\n\nMachine-written by FrogNano for issue #7 (job o.r.7.d).\n' +
        'A person must review this change before it is merged.\n\n' +
        'Co-authored-by: alice <5+alice@users.noreply.ghe.example>\n',
    );
  });

  it('cuts a long subject to 72 characters', () => {
    const subject = buildCommitMessage({
      issueTitle: 'x'.repeat(100),
      issueNumber: 1,
      jobId: 'j',
      coAuthors: [{ login: 'a', email: 'a@b' }],
    }).split('\n')[0];
    expect(subject).toHaveLength(72);
  });
});

describe('noreplyEmail', () => {
  it('uses id+login when the id is known, else the login', () => {
    expect(noreplyEmail({ login: 'alice', id: 5 }, 'ghe.example')).toBe('5+alice@users.noreply.ghe.example');
    expect(noreplyEmail({ login: 'alice' }, 'github.com')).toBe('alice@users.noreply.github.com');
    expect(noreplyEmail({ login: 'frognano[bot]' }, 'ghe.example:8443')).toBe(
      'frognano[bot]@users.noreply.ghe.example',
    );
  });
});

describe('tail', () => {
  it('keeps the last lines without trailing blank space', () => {
    const text = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n') + '\n\n';
    const out = tail(text).split('\n');
    expect(out).toHaveLength(TEST_TAIL_LINES);
    expect(out.at(-1)).toBe('line 99');
  });
});
