import type { CertificateAuthority } from '../../lib/pki/certificate-authority.js';
import { csrUriSans } from '../../lib/pki/certificate-authority.js';
import { MeshError } from '../../lib/errors.js';
import { identityToString, type Identity } from '../../lib/spiffe.js';
import type { CaClient } from './ca-client.js';

/** Local mode: certificates come from an in-process CA (`--local-ca DIR` or a generated root). */
export class LocalCaClient implements CaClient {
  constructor(private readonly ca: CertificateAuthority) {}

  async fetchCertificate(identity: Identity, csrPem: string, ttlSeconds: number): Promise<string[]> {
    const uri = identityToString(identity);
    const sans = csrUriSans(csrPem);
    if (sans.length !== 1 || sans[0] !== uri) {
      throw new MeshError('ZT_ERR_CERT_UNAVAILABLE', `CSR asks for ${sans.join(', ') || 'no URI SAN'}, not ${uri}`);
    }
    return this.ca.sign(csrPem, uri, ttlSeconds);
  }
}
