import { MeshError } from './errors.js';

/** A SPIFFE workload identity, `spiffe://<trustDomain>/ns/<namespace>/sa/<serviceAccount>` (ztunnel `src/identity/manager.rs`). */
export interface Identity {
  readonly trustDomain: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}

export const SPIFFE_PREFIX = 'spiffe://';
/** istiod omits the trust domain when it is the default, so an empty one means this. */
export const DEFAULT_TRUST_DOMAIN = 'cluster.local';
export const DEFAULT_SERVICE_ACCOUNT = 'default';

/**
 * A trust domain from config (TRUST_DOMAIN), checked against the SPIFFE ID spec: lowercase letters, digits, ".", "-"
 * and "_". Unset or empty is the default; anything else that does not fit is a config error, never an identity.
 */
export function parseTrustDomain(value: string | undefined, name = 'TRUST_DOMAIN'): string {
  if (value === undefined || value === '') return DEFAULT_TRUST_DOMAIN;
  if (!/^[a-z0-9._-]+$/.test(value)) {
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `${name}: "${value}" is not a SPIFFE trust domain (use lowercase letters, digits, ".", "-" and "_", e.g. cluster.local)`,
    );
  }
  return value;
}

export function identityToString(id: Identity): string {
  return `${SPIFFE_PREFIX}${id.trustDomain}/ns/${id.namespace}/sa/${id.serviceAccount}`;
}

/** Parses exactly `spiffe://td/ns/<ns>/sa/<sa>`, as ztunnel does; anything else is an error. */
export function parseIdentity(uri: string): Identity {
  if (!uri.startsWith(SPIFFE_PREFIX)) {
    throw new MeshError(
      'ZT_ERR_IDENTITY_MISMATCH',
      `"${uri}" is not a SPIFFE URI (expected spiffe://<td>/ns/<ns>/sa/<sa>)`,
    );
  }
  const parts = uri.slice(SPIFFE_PREFIX.length).split('/');
  if (parts.length !== 5 || parts[1] !== 'ns' || parts[3] !== 'sa' || parts.some((p) => p === '')) {
    throw new MeshError(
      'ZT_ERR_IDENTITY_MISMATCH',
      `"${uri}" is not a workload identity (expected spiffe://<td>/ns/<ns>/sa/<sa>)`,
    );
  }
  return Object.freeze({ trustDomain: parts[0]!, namespace: parts[2]!, serviceAccount: parts[4]! });
}

export function tryParseIdentity(uri: string): Identity | undefined {
  try {
    return parseIdentity(uri);
  } catch {
    return undefined;
  }
}

/**
 * The URI SANs of a certificate as Node reports them (`subjectaltname` is "URI:spiffe://..., DNS:x").
 * Node quotes entries that contain commas or quotes; SPIFFE URIs never do, so a plain split is exact for them.
 */
export function uriSans(subjectAltName: string | undefined): string[] {
  if (subjectAltName === undefined || subjectAltName === '') return [];
  const out: string[] = [];
  for (const part of subjectAltName.split(', ')) {
    if (part.startsWith('URI:')) out.push(part.slice(4));
  }
  return out;
}

/** The peer identity for policy: the first parseable SPIFFE URI SAN (ztunnel `src/tls/workload.rs`). */
export function identityFromSans(subjectAltName: string | undefined): Identity | undefined {
  for (const uri of uriSans(subjectAltName)) {
    const id = tryParseIdentity(uri);
    if (id !== undefined) return id;
  }
  return undefined;
}
