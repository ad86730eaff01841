import { describe, expect, it } from 'vitest';
import { parseQuantity, quantityMiB } from '../../../src/sandbox/quantity.js';

describe('Kubernetes quantities', () => {
  it('reads binary, decimal and exponent suffixes', () => {
    expect(parseQuantity('500m')).toBeCloseTo(0.5);
    expect(parseQuantity('2')).toBe(2);
    expect(parseQuantity('4Gi')).toBe(4 * 2 ** 30);
    expect(parseQuantity('1.5Ki')).toBe(1536);
    expect(parseQuantity('3M')).toBe(3e6);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(quantityMiB('3Gi')).toBe(3072);
    expect(quantityMiB('1G')).toBe(954);
  });
  it('refuses what is not a quantity', () => {
    expect(() => parseQuantity('4 GB')).toThrow(/not a Kubernetes quantity/);
    expect(() => parseQuantity('')).toThrow(RangeError);
  });
});
