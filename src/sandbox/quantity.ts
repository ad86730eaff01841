/**
 * Kubernetes resource quantities (`500m`, `2`, `4Gi`, `1e3`), as defined in the API reference,
 * "Quantity" (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/):
 * a decimal number, then a binary suffix (Ki…Ei), a decimal suffix (n, u, m, k, M…E) or an
 * exponent (`e3`).
 */

const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/**
 * The value of a quantity in base units (cores for `cpu`, bytes for memory and storage).
 *
 * @throws RangeError when `quantity` is not a Kubernetes quantity.
 */
export function parseQuantity(quantity: string): number {
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/.exec(
    quantity.trim(),
  );
  if (!m) throw new RangeError(`not a Kubernetes quantity: ${JSON.stringify(quantity)}`);
  const number = Number(m[1]);
  if (m[2]) return number * 10 ** Number(m[2].slice(1));
  const suffix = m[3] ?? '';
  return number * (BINARY[suffix] ?? DECIMAL[suffix] ?? 1);
}

/** A memory or storage quantity in MiB (rounded up). @throws RangeError as {@link parseQuantity}. */
export function quantityMiB(quantity: string): number {
  return Math.ceil(parseQuantity(quantity) / 2 ** 20);
}
