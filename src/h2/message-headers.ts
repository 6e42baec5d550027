import { streamError } from './h2-error.js';
import { H2ErrorCode } from './frame.js';
import type { HeaderField } from './header-block.js';

/** A request as HBONE sees it: CONNECT carries only `authority`; other methods carry `scheme` and `path` too. */
export interface RequestHead {
  readonly method: string;
  readonly authority: string | undefined;
  readonly scheme: string | undefined;
  readonly path: string | undefined;
  /** The regular (non-pseudo) fields, in wire order. */
  readonly fields: readonly HeaderField[];
}

export interface ResponseHead {
  readonly status: number;
  readonly fields: readonly HeaderField[];
}

/** RFC 9110 §5.1 token characters, lowercase only (RFC 9113 §8.2.1: uppercase names are malformed). */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
/** RFC 9113 §8.2.1: NUL, CR, LF anywhere, or whitespace at either end, make a value malformed. */
const BAD_VALUE = /[\0\r\n]|^[ \t]|[ \t]$/;
/** RFC 9113 §8.2.2: connection-specific fields never appear in HTTP/2 (`te` is checked apart). */
const CONNECTION_SPECIFIC = new Set(['connection', 'proxy-connection', 'keep-alive', 'transfer-encoding', 'upgrade']);
const REQUEST_PSEUDO = new Set([':method', ':scheme', ':authority', ':path']);
const STATUS_PSEUDO: ReadonlySet<string> = new Set([':status']);
const NO_PSEUDO: ReadonlySet<string> = new Set();
const STATUS = /^[1-9][0-9][0-9]$/;

/**
 * Splits a field list into pseudo-header fields and regular fields, enforcing RFC 9113 §8.2 and §8.3: pseudo
 * fields first, each once, only the allowed names; lowercase token names; values without NUL/CR/LF or edge
 * whitespace; no connection-specific fields. A violation is a malformed message: stream error PROTOCOL_ERROR.
 */
function split(
  streamId: number,
  fields: readonly HeaderField[],
  allowed: ReadonlySet<string>,
): { pseudo: Map<string, string>; regular: HeaderField[] } {
  const pseudo = new Map<string, string>();
  const regular: HeaderField[] = [];
  const malformed = (why: string): Error =>
    streamError(streamId, H2ErrorCode.PROTOCOL_ERROR, `malformed header fields: ${why} (RFC 9113 §8.2)`);
  for (const field of fields) {
    const [name, value] = field;
    if (BAD_VALUE.test(value))
      throw malformed(`the value of ${JSON.stringify(name)} has NUL, CR, LF or edge whitespace`);
    if (name.startsWith(':')) {
      if (regular.length > 0) throw malformed(`pseudo-header ${name} after a regular field`);
      if (!allowed.has(name)) throw malformed(`pseudo-header ${name} is not allowed here`);
      if (pseudo.has(name)) throw malformed(`pseudo-header ${name} repeated`);
      pseudo.set(name, value);
      continue;
    }
    if (!FIELD_NAME.test(name)) throw malformed(`field name ${JSON.stringify(name)} is not a lowercase token`);
    if (CONNECTION_SPECIFIC.has(name)) throw malformed(`connection-specific field ${name}`);
    if (name === 'te' && value !== 'trailers') throw malformed(`te: ${value}`);
    regular.push(field);
  }
  return { pseudo, regular };
}

/** A request's head (RFC 9113 §8.3.1), with CONNECT's own rule (§8.5): `:authority` only, no `:scheme` or `:path`. */
export function parseRequestHead(streamId: number, fields: readonly HeaderField[]): RequestHead {
  const { pseudo, regular } = split(streamId, fields, REQUEST_PSEUDO);
  const method = pseudo.get(':method');
  const authority = pseudo.get(':authority');
  const scheme = pseudo.get(':scheme');
  const path = pseudo.get(':path');
  const malformed = (why: string): Error =>
    streamError(streamId, H2ErrorCode.PROTOCOL_ERROR, `malformed request: ${why}`);
  if (method === undefined) throw malformed('no :method');
  if (method === 'CONNECT') {
    if (authority === undefined || authority === '') throw malformed('CONNECT without :authority (RFC 9113 §8.5)');
    if (scheme !== undefined || path !== undefined) throw malformed('CONNECT with :scheme or :path (RFC 9113 §8.5)');
  } else if (scheme === undefined || path === undefined || path === '') {
    throw malformed(`${method} without :scheme and :path (RFC 9113 §8.3.1)`);
  }
  return { method, authority, scheme, path, fields: regular };
}

/** A response's head (RFC 9113 §8.3.2): exactly one three-digit `:status`. */
export function parseResponseHead(streamId: number, fields: readonly HeaderField[]): ResponseHead {
  const { pseudo, regular } = split(streamId, fields, STATUS_PSEUDO);
  const status = pseudo.get(':status');
  if (status === undefined || !STATUS.test(status))
    throw streamError(streamId, H2ErrorCode.PROTOCOL_ERROR, `malformed response: :status ${status ?? 'missing'}`);
  return { status: Number(status), fields: regular };
}

/** Trailers (RFC 9113 §8.1): regular fields only. */
export function parseTrailers(streamId: number, fields: readonly HeaderField[]): readonly HeaderField[] {
  return split(streamId, fields, NO_PSEUDO).regular;
}
