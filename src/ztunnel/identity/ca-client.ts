import type { Identity } from '../../lib/spiffe.js';

/**
 * Issues certificates: the CreateCertificate contract (ztunnel `src/identity/caclient.rs`). `csrPem` is for `identity`; the reply is
 * `[leaf, ...intermediates, rootBundle]`.
 */
export interface CaClient {
  fetchCertificate(identity: Identity, csrPem: string, ttlSeconds: number): Promise<string[]>;
  /** Releases connections, if any. */
  close?(): void;
}
