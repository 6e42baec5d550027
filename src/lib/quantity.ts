/**
 * Kubernetes resource quantities (k8s.io/apimachinery pkg/api/resource/quantity.go): a decimal number with a
 * binary suffix (Ki … Ei), a decimal suffix (n, u, m, k, M, G, T, P, E) or an exponent (`1e3`). Written here
 * because the downward API needs only the value as a number: no npm package parses this grammar, and
 * @kubernetes/client-node leaves quantities as strings.
 */

const BINARY: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Readonly<Record<string, number>> = {
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
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/** The value of `text`; undefined when it is not a quantity. */
export function parseQuantity(text: string): number | undefined {
  const m = QUANTITY.exec(text.trim());
  if (m === null) return undefined;
  const n = Number(m[1]);
  if (m[2] !== undefined) return n * 10 ** Number(m[2].slice(1));
  const suffix = m[3] ?? '';
  return n * (BINARY[suffix] ?? DECIMAL[suffix] ?? 1);
}
