/**
 * The key and certificate request a workload's certificate is asked for with, made with `node:crypto` and the DER
 * writer beside it (see der-writer.ts for why not @peculiar/x509).
 */
import { generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import {
  bitString,
  booleanTrue,
  contextTag,
  objectIdentifier,
  octetString,
  sequence,
  set,
  smallInteger,
} from './der-writer.js';
import { pemEncode } from './pem.js';

export interface KeyAndCsr {
  /** PKCS#8 PEM private key. Never logged. */
  readonly keyPem: string;
  readonly csrPem: string;
}

/** RFC 2985 extensionRequest, RFC 5280 subjectAltName, RFC 5758 ecdsa-with-SHA256. */
const OID = {
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
} as const;
/** GeneralName's uniformResourceIdentifier: [6] IMPLICIT IA5String. */
const URI_NAME_TAG = 6;
const PKCS10_VERSION_1 = 0;

const generateEcKeyPair = promisify(generateKeyPair);

/**
 * A fresh ECDSA P-256 key and a CSR for `uri` with an empty subject and one critical URI SAN, as ztunnel
 * builds them (ztunnel `src/tls/csr.rs`; RFC 2986 CertificationRequest).
 */
export async function createKeyAndCsr(uri: string): Promise<KeyAndCsr> {
  const { publicKey, privateKey } = await generateEcKeyPair('ec', { namedCurve: 'P-256' });
  return {
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    csrPem: pemEncode('CERTIFICATE REQUEST', csrDer(uri, publicKey, privateKey)),
  };
}

function csrDer(uri: string, publicKey: KeyObject, privateKey: KeyObject): Buffer {
  const san = sequence(
    objectIdentifier(OID.subjectAltName),
    booleanTrue(),
    octetString(sequence(contextTag(URI_NAME_TAG, false, Buffer.from(uri, 'ascii')))),
  );
  const info = sequence(
    smallInteger(PKCS10_VERSION_1),
    sequence(),
    publicKey.export({ type: 'spki', format: 'der' }),
    contextTag(0, true, sequence(objectIdentifier(OID.extensionRequest), set(sequence(san)))),
  );
  const signature = sign('sha256', info, { key: privateKey, dsaEncoding: 'der' });
  return sequence(info, sequence(objectIdentifier(OID.ecdsaWithSha256)), bitString(signature));
}
