import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LEAF_PROTOCOL, LEAF_TOOL_NAMES, PROTOCOL_TEXT } from '../../../src/leaf/protocol.js';

const SHARED = new URL('../../../../shared/leaf-protocol/leaf-protocol.json', import.meta.url);

describe('Leaf protocol data', () => {
  it('is byte-identical to shared/leaf-protocol/leaf-protocol.json', () => {
    if (!existsSync(SHARED)) {
      throw new Error(
        `${SHARED.pathname} is missing: the shared/ folder must sit beside the repository checkout`,
      );
    }
    expect(PROTOCOL_TEXT).toBe(readFileSync(SHARED, 'utf8'));
  });

  it('carries its MIT notice', () => {
    const notice = readFileSync(new URL('../../../src/leaf/PROTOCOL-NOTICE.md', import.meta.url), 'utf8');
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
