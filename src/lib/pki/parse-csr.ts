/**
 * Strict CSR parsing for the CA: exactly one PEM `CERTIFICATE REQUEST` block with nothing but whitespace around
 * it, whose base64 decodes to exactly one DER CertificationRequest (RFC 2986) with no trailing data, as Go's
 * pem.Decode + x509.ParseCertificateRequest (what Istio's CA uses) require. Read with der-reader.ts (see
 * der-writer.ts for why not @peculiar/x509); the signature is checked with `node:crypto`.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { MeshError } from '../errors.js';
import { children, content, expectTag, oidString, readTlv, TAG, whole, type Tlv } from './der-reader.js';

const PEM_RE = /^\s*-----BEGIN CERTIFICATE REQUEST-----\r?\n([A-Za-z0-9+/=\r\n]+)-----END CERTIFICATE REQUEST-----\s*$/;

/** Signature algorithms a CSR may use (RFC 5758, RFC 4055, RFC 8410), by OID: the digest, or null for Ed25519. */
const SIGNATURE_DIGESTS: ReadonlyMap<string, string | null> = new Map([
  ['1.2.840.10045.4.3.2', 'sha256'],
  ['1.2.840.10045.4.3.3', 'sha384'],
  ['1.2.840.10045.4.3.4', 'sha512'],
  ['1.2.840.113549.1.1.11', 'sha256'],
  ['1.2.840.113549.1.1.12', 'sha384'],
  ['1.2.840.113549.1.1.13', 'sha512'],
  ['1.3.101.112', null],
]);
const OID_EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const OID_SUBJECT_ALT_NAME = '2.5.29.17';
/** GeneralName's [6] uniformResourceIdentifier (RFC 5280 §4.2.1.6). */
const GENERAL_NAME_URI = 0x86;
const ATTRIBUTES_TAG = 0xa0;

/** What the CA takes from a CSR. */
export interface ParsedCsr {
  /** The requester's SubjectPublicKeyInfo, DER. */
  readonly spki: Buffer;
  readonly uriSans: readonly string[];
  /** Whether the request is signed by the key it carries. */
  verify(): boolean;
}

/** Parses `pem` or throws ISTIOD_ERR_CSR saying what is wrong with it. */
export function parseCsrPem(pem: string): ParsedCsr {
  const m = PEM_RE.exec(pem);
  if (m === null)
    throw new MeshError(
      'ISTIOD_ERR_CSR',
      'the CSR is not exactly one PEM "CERTIFICATE REQUEST" block (no data may come before or after it)',
    );
  const der = Buffer.from(m[1]!.replace(/\s/g, ''), 'base64');
  let outer;
  try {
    outer = readTlv(der, 0, Number.MAX_SAFE_INTEGER);
  } catch {
    outer = undefined;
  }
  if (outer?.tag !== TAG.sequence)
    throw new MeshError('ISTIOD_ERR_CSR', "the CSR's DER is not a definite-length SEQUENCE");
  if (outer.end > der.length)
    throw new MeshError(
      'ISTIOD_ERR_CSR',
      `the CSR's DER is truncated: its SEQUENCE declares ${outer.end} bytes, the block holds ${der.length}`,
    );
  if (outer.end < der.length)
    throw new MeshError(
      'ISTIOD_ERR_CSR',
      `the CSR's DER is ${outer.end} bytes followed by ${der.length - outer.end} bytes of trailing data`,
    );
  try {
    return parseCsrDer(der);
  } catch (e) {
    throw new MeshError('ISTIOD_ERR_CSR', `cannot parse the CSR: ${(e as Error).message}`);
  }
}

function parseCsrDer(der: Buffer): ParsedCsr {
  const [info, alg, sig, ...extra] = children(der, readTlv(der, 0));
  if (extra.length > 0) throw new Error('CertificationRequest has more than three elements');
  expectTag(info, TAG.sequence, 'certificationRequestInfo');
  const [version, subject, spki, attributes] = children(der, info!);
  if (!content(der, expectTag(version, TAG.integer, 'version')).equals(Buffer.from([0])))
    throw new Error('version is not v1 (0)');
  expectTag(subject, TAG.sequence, 'subject');
  expectTag(spki, TAG.sequence, 'subjectPKInfo');
  const [algOid] = children(der, expectTag(alg, TAG.sequence, 'signatureAlgorithm'));
  const algorithm = oidString(content(der, expectTag(algOid, TAG.oid, 'signatureAlgorithm')));
  const signature = content(der, expectTag(sig, TAG.bitString, 'signature'));
  if (signature[0] !== 0) throw new Error('signature BIT STRING has unused bits');
  if (!SIGNATURE_DIGESTS.has(algorithm)) throw new Error(`unsupported signature algorithm ${algorithm}`);
  let key: KeyObject;
  try {
    key = createPublicKey({ key: whole(der, spki!), format: 'der', type: 'spki' });
  } catch (e) {
    throw new Error(`subjectPKInfo: ${(e as Error).message}`);
  }
  const signed = whole(der, info!);
  return {
    spki: Buffer.from(whole(der, spki!)),
    uriSans: attributes === undefined ? [] : uriSans(der, expectTag(attributes, ATTRIBUTES_TAG, 'attributes')),
    verify: () => {
      const digest = SIGNATURE_DIGESTS.get(algorithm) ?? null;
      try {
        return verify(
          digest,
          signed,
          key.asymmetricKeyType === 'ec' ? { key, dsaEncoding: 'der' } : key,
          signature.subarray(1),
        );
      } catch {
        return false;
      }
    },
  };
}

/** The URI names in the subjectAltName extension of the extensionRequest attribute, if there is one. */
function uriSans(der: Buffer, attributes: Tlv): string[] {
  for (const attr of children(der, attributes)) {
    const [type, values] = children(der, expectTag(attr, TAG.sequence, 'attribute'));
    if (oidString(content(der, expectTag(type, TAG.oid, 'attribute type'))) !== OID_EXTENSION_REQUEST) continue;
    for (const extensions of children(der, expectTag(values, TAG.set, 'extensionRequest values'))) {
      for (const ext of children(der, expectTag(extensions, TAG.sequence, 'extensions'))) {
        const parts = children(der, expectTag(ext, TAG.sequence, 'extension'));
        if (oidString(content(der, expectTag(parts[0], TAG.oid, 'extension id'))) !== OID_SUBJECT_ALT_NAME) continue;
        const value = content(der, expectTag(parts[parts.length - 1], TAG.octetString, 'extension value'));
        const names = expectTag(readTlv(value, 0), TAG.sequence, 'subjectAltName');
        if (names.end !== value.length) throw new Error('subjectAltName has trailing data');
        return children(value, names)
          .filter((n) => n.tag === GENERAL_NAME_URI)
          .map((n) => {
            const uri = content(value, n);
            // An IA5String (RFC 5280 §4.2.1.6), as Go's x509 requires of a URI SAN.
            if (uri.some((c) => c > 0x7f)) throw new Error('a URI subjectAltName is not ASCII (IA5String)');
            return uri.toString('latin1');
          });
      }
    }
  }
  return [];
}

/** The URI SANs a CSR asks for. */
export function csrUriSans(csrPem: string): string[] {
  return [...parseCsrPem(csrPem).uriSans];
}
