import assert from 'node:assert/strict';
import type { Istiod } from '../../src/istiod/istiod.js';
import { runPython } from './python.js';

/** What test/interop/ads_grpcio.py prints: istiod's first Address response, decoded from the wire by field number. */
export interface DecodedAds {
  readonly type_url: string;
  readonly nonce_set: boolean;
  readonly workloads: Record<string, unknown>[];
  readonly services: Record<string, unknown>[];
}

/** istiod's Address resources as python3-grpcio receives them, subscribing as ztunnel with a ztunnel token. */
export async function adsFromPython(ist: Istiod): Promise<DecodedAds> {
  const token = await ist.issuer.issue({ namespace: 'istio-system', serviceAccount: 'ztunnel', audience: 'istio-ca' });
  const py = await runPython('ads_grpcio.py', [`127.0.0.1:${ist.ports.grpc}`, ist.rootCertPath, token]);
  assert.equal(py.status, 0, py.stderr);
  return JSON.parse(py.stdout) as DecodedAds;
}
