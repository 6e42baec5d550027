/**
 * The one place that wires @peculiar/x509 to Node's WebCrypto. reflect-metadata must load before it.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export { x509 };
export const subtle = webcrypto.subtle;

/** ECDSA P-256 with SHA-256: what ztunnel's CSRs and Istio's workload certificates use (ztunnel `src/tls/csr.rs`). */
export const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
