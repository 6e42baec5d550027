/** The static table of RFC 7541 Appendix A, and the lookups an encoder needs to find its entries. */
import type { HeaderField } from '../header-block.js';

/** Entry i (1-based, as on the wire) is STATIC_TABLE[i - 1]. */
export const STATIC_TABLE: readonly HeaderField[] = [
  [':authority', ''], // 1
  [':method', 'GET'], // 2
  [':method', 'POST'], // 3
  [':path', '/'], // 4
  [':path', '/index.html'], // 5
  [':scheme', 'http'], // 6
  [':scheme', 'https'], // 7
  [':status', '200'], // 8
  [':status', '204'], // 9
  [':status', '206'], // 10
  [':status', '304'], // 11
  [':status', '400'], // 12
  [':status', '404'], // 13
  [':status', '500'], // 14
  ['accept-charset', ''], // 15
  ['accept-encoding', 'gzip, deflate'], // 16
  ['accept-language', ''], // 17
  ['accept-ranges', ''], // 18
  ['accept', ''], // 19
  ['access-control-allow-origin', ''], // 20
  ['age', ''], // 21
  ['allow', ''], // 22
  ['authorization', ''], // 23
  ['cache-control', ''], // 24
  ['content-disposition', ''], // 25
  ['content-encoding', ''], // 26
  ['content-language', ''], // 27
  ['content-length', ''], // 28
  ['content-location', ''], // 29
  ['content-range', ''], // 30
  ['content-type', ''], // 31
  ['cookie', ''], // 32
  ['date', ''], // 33
  ['etag', ''], // 34
  ['expect', ''], // 35
  ['expires', ''], // 36
  ['from', ''], // 37
  ['host', ''], // 38
  ['if-match', ''], // 39
  ['if-modified-since', ''], // 40
  ['if-none-match', ''], // 41
  ['if-range', ''], // 42
  ['if-unmodified-since', ''], // 43
  ['last-modified', ''], // 44
  ['link', ''], // 45
  ['location', ''], // 46
  ['max-forwards', ''], // 47
  ['proxy-authenticate', ''], // 48
  ['proxy-authorization', ''], // 49
  ['range', ''], // 50
  ['referer', ''], // 51
  ['refresh', ''], // 52
  ['retry-after', ''], // 53
  ['server', ''], // 54
  ['set-cookie', ''], // 55
  ['strict-transport-security', ''], // 56
  ['transfer-encoding', ''], // 57
  ['user-agent', ''], // 58
  ['vary', ''], // 59
  ['via', ''], // 60
  ['www-authenticate', ''], // 61
];

const byField = new Map<string, number>();
const byName = new Map<string, number>();
STATIC_TABLE.forEach(([name, value], i) => {
  byField.set(`${name}\0${value}`, i + 1);
  if (!byName.has(name)) byName.set(name, i + 1);
});

/** The index of the entry holding exactly this name and value, or 0 when there is none. */
export function staticFieldIndex(name: string, value: string): number {
  return byField.get(`${name}\0${value}`) ?? 0;
}

/** The lowest index of an entry with this name, or 0 when there is none. */
export function staticNameIndex(name: string): number {
  return byName.get(name) ?? 0;
}
