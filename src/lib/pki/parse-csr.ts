/**
 * Strict CSR parsing for the CA: exactly one PEM `CERTIFICATE REQUEST` block with nothing but whitespace around
 * it, whose base64 decodes to exactly one DER SEQUENCE. Go's pem.Decode + x509.ParseCertificateRequest (what
 * Istio's CA uses) refuse trailing data after the DER; @peculiar/x509 parses the first element and ignores
 * anything after it (its `rawData` is the whole input), so the outer DER length is read here by hand.
 */
import { MeshError } from '../errors.js';
import { x509 } from './x509.js';

const PEM_RE = /^\s*-----BEGIN CERTIFICATE REQUEST-----\r?\n([A-Za-z0-9+/=\r\n]+)-----END CERTIFICATE REQUEST-----\s*$/;
const DER_SEQUENCE = 0x30;

/** Parses `pem` or throws ISTIOD_ERR_CSR saying what is wrong with it. */
export function parseCsrPem(pem: string): x509.Pkcs10CertificateRequest {
  const m = PEM_RE.exec(pem);
  if (m === null) throw new MeshError('ISTIOD_ERR_CSR', 'the CSR is not exactly one PEM "CERTIFICATE REQUEST" block (no data may come before or after it)');
  const der = Buffer.from(m[1]!.replace(/\s/g, ''), 'base64');
  const length = derLength(der);
  if (length !== der.length) {
    throw new MeshError('ISTIOD_ERR_CSR', `the CSR's DER is ${length === undefined ? 'not a definite-length SEQUENCE' : `${length} bytes followed by ${der.length - length} bytes of trailing data`}`);
  }
  try {
    return new x509.Pkcs10CertificateRequest(der);
  } catch (e) {
    throw new MeshError('ISTIOD_ERR_CSR', `cannot parse the CSR: ${(e as Error).message}`);
  }
}

/** The URI SANs a CSR asks for. */
export function csrUriSans(csrPem: string): string[] {
  const csr = parseCsrPem(csrPem);
  const ext = csr.extensions.find((e): e is x509.SubjectAlternativeNameExtension => e instanceof x509.SubjectAlternativeNameExtension);
  return ext === undefined ? [] : ext.names.items.filter((n) => n.type === 'url').map((n) => n.value);
}

/** Total length (header + content) of the DER SEQUENCE at the start of `b`, or undefined if it is not one. */
function derLength(b: Buffer): number | undefined {
  if (b.length < 2 || b[0] !== DER_SEQUENCE) return undefined;
  const first = b[1]!;
  if (first < 0x80) return 2 + first;
  const n = first & 0x7f;
  if (n === 0 || n > 4 || b.length < 2 + n) return undefined;
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + b[2 + i]!;
  return 2 + n + len;
}
