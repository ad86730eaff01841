import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../../../../src/pipeline/verification/secret-patterns.js';

describe('redactSecrets', () => {
  it('replaces each secret by its kind and keeps the rest', () => {
    const token = `ghs_${'A1b2'.repeat(9)}`;
    const aws = 'AKIAIOSFODNN7ABCDEFG';
    expect(redactSecrets(`export GH=${token} AWS=${aws} ok`)).toBe(
      'export GH=[redacted: GitHub token] AWS=[redacted: AWS access key id] ok',
    );
  });

  it("keeps AWS's documented example key id", () => {
    expect(redactSecrets('AKIAIOSFODNN7EXAMPLE')).toBe('AKIAIOSFODNN7EXAMPLE');
  });

  it('replaces a whole PEM private key block, and a cut one to the end', () => {
    const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----';
    expect(redactSecrets(`a\n${pem}\nb`)).toBe('a\n[redacted: private key]\nb');
    expect(redactSecrets('x -----BEGIN PRIVATE KEY-----\nMIIE')).toBe('x [redacted: private key]');
  });
});
