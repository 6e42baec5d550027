import * as grpc from '@grpc/grpc-js';
import type { IstioCertificateResponse } from '../../api/istio/v1/auth/ca_pb.js';
import { IstioCertificateService } from '../../api/istio/v1/auth/ca_pb.js';
import { controlPlaneMetadata, grpcClient } from '../grpc-channel.js';
import type { TypedClient } from '../../lib/grpc-typed-client.js';
import { describeError, MeshError } from '../../lib/errors.js';
import { identityToString, type Identity } from '../../lib/spiffe.js';
import type { CaClient } from './ca-client.js';

/** A CSR that has not been answered in this long fails (and is retried with backoff by the SecretManager). */
const CALL_TIMEOUT_MS = 10_000;

export interface IstioCaClientOptions {
  readonly address: string;
  /** undefined: the OS trust store (CA_ROOT_CA=SYSTEM). */
  readonly rootPem: string | undefined;
  /** The token file, re-read on every call (projected tokens rotate); an empty file is an error. */
  readonly tokenFile: string;
  readonly clusterId: string;
  /** Shared (node proxy) mode: ask for each workload's identity through `ImpersonatedIdentity`. */
  readonly impersonate: boolean;
  readonly altHostname?: string | undefined;
  /** CA_HEADER_* metadata. */
  readonly headers?: readonly (readonly [string, string])[];
}

/** ztunnel's CA client: `CreateCertificate` with Bearer token and `clusterid` metadata (ztunnel `src/identity/caclient.rs`). */
export class IstioCaClient implements CaClient {
  private readonly client: TypedClient<typeof IstioCertificateService>;

  constructor(private readonly o: IstioCaClientOptions) {
    this.client = grpcClient(IstioCertificateService, o.address, o.rootPem, o.altHostname);
  }

  async fetchCertificate(identity: Identity, csrPem: string, ttlSeconds: number): Promise<string[]> {
    const md = await controlPlaneMetadata(this.o.tokenFile, this.o.clusterId, this.o.headers ?? []).catch(
      (e: unknown) => {
        throw new MeshError('ZT_ERR_CERT_UNAVAILABLE', describeError(e));
      },
    );
    const uri = identityToString(identity);
    const req = {
      csr: csrPem,
      validityDuration: BigInt(ttlSeconds),
      ...(this.o.impersonate ? { metadata: { ImpersonatedIdentity: uri } } : {}),
    };
    const res = await new Promise<IstioCertificateResponse>((resolve, reject) => {
      this.client.createCertificate(req, md, { deadline: Date.now() + CALL_TIMEOUT_MS }, (err, value) => {
        if (err !== null)
          reject(
            new MeshError(
              'ZT_ERR_CERT_UNAVAILABLE',
              `CreateCertificate for ${uri} failed: ${grpc.status[err.code]}: ${err.details}`,
            ),
          );
        else resolve(value!);
      });
    });
    if (res.certChain.length === 0)
      throw new MeshError('ZT_ERR_CERT_UNAVAILABLE', `CA returned an empty chain for ${uri}`);
    return res.certChain;
  }

  close(): void {
    this.client.close();
  }
}
