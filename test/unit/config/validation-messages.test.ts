import { describe, expect, it } from 'vitest';
import { describeValue, formatKeyPath, suggestKey } from '../../../src/config/validation-messages.js';

describe('validation message helpers', () => {
  it('formats key paths the way people write them', () => {
    expect(formatKeyPath(['rules', 2, 'sandbox', 'image'])).toBe('rules[2].sandbox.image');
    expect(formatKeyPath(['protectedPaths', 0])).toBe('protectedPaths[0]');
    expect(formatKeyPath([])).toBe('');
  });

  it('suggests close keys, ignoring case, "-" and "_", and nothing for unrelated words', () => {
    const known = ['testCommand', 'setupCommand', 'maxSteps', 'label'];
    expect(suggestKey('tesCommand', known)).toBe('testCommand');
    expect(suggestKey('test-command', known)).toBe('testCommand');
    expect(suggestKey('MAXSTEPS', known)).toBe('maxSteps');
    expect(suggestKey('max_step', known)).toBe('maxSteps');
    expect(suggestKey('lable', known)).toBe('label');
    expect(suggestKey('colour', known)).toBeUndefined();
    expect(suggestKey('x', [])).toBeUndefined();
  });

  it('quotes values briefly and never dumps lists or mappings', () => {
    expect(describeValue('lots')).toBe('"lots"');
    expect(describeValue(12)).toBe('12');
    expect(describeValue(false)).toBe('false');
    expect(describeValue(null)).toBe('null');
    expect(describeValue([1, 2])).toBe('a list');
    expect(describeValue({ a: 1 })).toBe('a mapping');
    const long = describeValue('x'.repeat(500));
    expect(long.length).toBeLessThan(70);
    expect(long.endsWith('…"')).toBe(true);
  });
});
