import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LEAF_PROTOCOL, LEAF_TOOL_NAMES, PROTOCOL_TEXT } from '../../../src/protocol/protocol.js';

/** sha256 of `shared/leaf-protocol/leaf-protocol.json` when it was copied (PROTOCOL-NOTICE.md). */
const PROTOCOL_SHA256 = 'cde9e11ae90c60e8b02e46d77f662e94bd4f30172024268c9479a483b41a6da5';
const notice = readFileSync(new URL('../../../src/protocol/PROTOCOL-NOTICE.md', import.meta.url), 'utf8');

// The copy's equality with ../shared/ is proven by scripts/check-shared-copies.sh (run by .ci/run
// where ../shared/ exists): these tests need nothing outside the repository.
describe('Leaf protocol data', () => {
  it('is the copy of shared/leaf-protocol/leaf-protocol.json recorded in PROTOCOL-NOTICE.md', () => {
    const sha = createHash('sha256').update(PROTOCOL_TEXT).digest('hex');
    expect(sha).toBe(PROTOCOL_SHA256);
    expect(notice.replace(/\s+/g, '')).toContain(PROTOCOL_SHA256);
  });

  it('carries its MIT notice', () => {
    expect(notice).toContain('MIT License');
    expect(notice).toContain('Copyright (c) Microsoft Corporation');
  });

  it('has the five tools in order and the evaluated limits', () => {
    expect(LEAF_TOOL_NAMES).toEqual(['Read', 'Write', 'Edit', 'Glob', 'Bash']);
    expect(LEAF_PROTOCOL.limits.max_steps).toBe(150);
    expect(LEAF_PROTOCOL.limits.max_context_tokens).toBe(131072);
    expect(LEAF_PROTOCOL.request_defaults.max_completion_tokens).toBe(8192);
  });
});
