/**
 * The field checks of RFC 9113 §8.2.1, applied to literals as they are decoded (indexed fields were checked
 * when they entered the dynamic table, static ones are valid). A field that fails them makes the message
 * malformed; the decoder refuses the block, as it refuses any block it cannot pass on intact.
 */
import { compressionError } from './compression-error.js';

/** How much of an offending name an error quotes (names are the peer's input; values are never quoted). */
const QUOTED_NAME_CHARS = 64;

const COLON = 0x3a;

function quoted(name: string): string {
  return JSON.stringify(name.length > QUOTED_NAME_CHARS ? `${name.slice(0, QUOTED_NAME_CHARS)}...` : name);
}

const hex = (c: number): string => `0x${c.toString(16).padStart(2, '0')}`;

/** Names: non-empty, lowercase, no controls, space, DEL or octets above 0x7f, a colon only as a pseudo-header's first char. */
export function checkFieldName(name: string, offset: number): void {
  if (name.length === 0) throw compressionError('empty header field name', offset);
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) throw compressionError(`header field name ${quoted(name)} has an uppercase character (malformed, RFC 9113 §8.2.1)`, offset);
    if (c <= 0x20 || c >= 0x7f || (c === COLON && i > 0)) {
      throw compressionError(`header field name ${quoted(name)} has character ${hex(c)} at ${i} (malformed, RFC 9113 §8.2.1)`, offset);
    }
  }
}

const isSpaceOrTab = (c: number): boolean => c === 0x20 || c === 0x09;

/** Values: no NUL, LF or CR, and no space or tab at either end. */
export function checkFieldValue(name: string, value: string, offset: number): void {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x00 || c === 0x0a || c === 0x0d) throw compressionError(`value of ${quoted(name)} has character ${hex(c)} at ${i} (malformed, RFC 9113 §8.2.1)`, offset);
  }
  if (value.length > 0 && (isSpaceOrTab(value.charCodeAt(0)) || isSpaceOrTab(value.charCodeAt(value.length - 1)))) {
    throw compressionError(`value of ${quoted(name)} starts or ends with whitespace (malformed, RFC 9113 §8.2.1)`, offset);
  }
}
