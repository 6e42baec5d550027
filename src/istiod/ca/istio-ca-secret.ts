/**
 * The `istio-ca-secret` Secret in istiod's namespace, where Istio's istiod keeps its self-signed CA so that every
 * replica and every restart signs with the same root (istio `security/pkg/pki/ca/ca.go` NewSelfSignedIstioCAOptions,
 * BuildSecret): type `istio.io/ca-root`, the root under both `ca-cert.pem` and `root-cert.pem`, its key under
 * `ca-key.pem`, and `cert-chain.pem` and `key.pem` empty. Istio reads back only `ca-cert.pem` and `ca-key.pem`
 * (loadSelfSignedCaSecret): the certificate is then both the signing CA and the root. So an amesh istiod and an
 * Istio one can take over each other's Secret.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { verifySigningCa, type SigningCa } from '../../lib/pki/signing-ca.js';

export const ISTIO_CA_SECRET = 'istio-ca-secret';
/** ca.go istioCASecretType. */
export const ISTIO_CA_SECRET_TYPE = 'istio.io/ca-root';
/** ca.go's key names. */
export const ISTIO_CA_SECRET_KEYS = {
  caCert: 'ca-cert.pem',
  caKey: 'ca-key.pem',
  rootCert: 'root-cert.pem',
  certChain: 'cert-chain.pem',
  privateKey: 'key.pem',
} as const;

const base64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** The Secret holding the self-signed root `certPem` and its key `keyPem`, shaped as Istio's BuildSecret shapes it. */
export function istioCaSecret(namespace: string, certPem: string, keyPem: string): V1Secret {
  const k = ISTIO_CA_SECRET_KEYS;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: ISTIO_CA_SECRET, namespace },
    type: ISTIO_CA_SECRET_TYPE,
    data: {
      [k.certChain]: '',
      [k.privateKey]: '',
      [k.rootCert]: base64(certPem),
      [k.caCert]: base64(certPem),
      [k.caKey]: base64(keyPem),
    },
  };
}

/**
 * The CA in `secret` (as read from the API: `data` base64), its `ca-cert.pem` both signing certificate and root.
 * Errors are ISTIOD_ERR_CA_SECRET and name the Secret and the key at fault.
 */
export function signingCaFromSecret(secret: V1Secret, now = Date.now()): SigningCa {
  const k = ISTIO_CA_SECRET_KEYS;
  const where = `Secret ${secret.metadata?.namespace ?? ''}/${secret.metadata?.name ?? ISTIO_CA_SECRET}`;
  const text = (key: string): string => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
  const caCert = text(k.caCert);
  return verifySigningCa(
    { caCert, caKey: text(k.caKey), rootCert: caCert, certChain: '' },
    {
      code: 'ISTIOD_ERR_CA_SECRET',
      names: { caCert: k.caCert, caKey: k.caKey, rootCert: k.caCert, certChain: k.caCert },
      locate: (key) => `${where} key ${key}`,
    },
    now,
  );
}
