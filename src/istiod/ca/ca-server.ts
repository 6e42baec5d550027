import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { Counter, type Registry as MetricsRegistry } from 'prom-client';
import {
  IstioCertificateService,
  type IstioCertificateRequest,
  type IstioCertificateResponse,
} from '../../api/istio/v1/auth/ca_pb.js';
import { csrUriSans, type CertificateAuthority } from '../../lib/pki/certificate-authority.js';
import { describeError, isMeshError, MeshError } from '../../lib/errors.js';
import { identityToString, parseIdentity, type Identity } from '../../lib/spiffe.js';
import type { IstiodConfig } from '../config.js';
import type { Caller, CallerAuthenticator } from './authenticate.js';
import { AUTHENTICATION_FAILURE, authenticatedCaller } from './authentication-interceptor.js';
import type { NodeAuthorizer } from './node-authorizer.js';

/** The request metadata key a node proxy uses to ask for another workload's certificate (ztunnel `src/identity/caclient.rs`). */
export const IMPERSONATED_IDENTITY = 'ImpersonatedIdentity';

const CREATE_CERTIFICATE_PATH = `/${IstioCertificateService.typeName}/${IstioCertificateService.method.createCertificate.name}`;

/** Istio's citadel metric names. */
function caMetrics(registry: MetricsRegistry): Record<'csr' | 'issued' | 'authnFailure' | 'signError', Counter> {
  const registers = [registry];
  return {
    csr: new Counter({
      name: 'citadel_server_csr_count',
      help: 'The number of CSRs received by Citadel server.',
      registers,
    }),
    issued: new Counter({
      name: 'citadel_server_success_cert_issuance_count',
      help: 'The number of certificates issuances that have succeeded.',
      registers,
    }),
    authnFailure: new Counter({
      name: 'citadel_server_authentication_failure_count',
      help: 'The number of authentication failures.',
      registers,
    }),
    signError: new Counter({
      name: 'citadel_server_csr_sign_error_count',
      help: 'The number of errors occurred when signing the CSR.',
      registers,
    }),
  };
}

/** As Istio answers impersonation failures (security/pkg/server/ca/server.go): opaque, the reason is logged. */
const IMPERSONATION_FAILURE = 'request impersonation authentication failure';

/**
 * The status a caller sees. Authentication and impersonation failures are opaque, as Istio's are; what was wrong
 * with an authenticated caller's CSR is told to it.
 */
function grpcError(e: unknown): Partial<grpc.StatusObject> {
  if (isMeshError(e, 'ISTIOD_ERR_AUTHENTICATION'))
    return { code: grpc.status.UNAUTHENTICATED, details: AUTHENTICATION_FAILURE };
  if (isMeshError(e, 'ISTIOD_ERR_IMPERSONATION'))
    return { code: grpc.status.UNAUTHENTICATED, details: IMPERSONATION_FAILURE };
  if (isMeshError(e, 'ISTIOD_ERR_CSR')) return { code: grpc.status.INVALID_ARGUMENT, details: e.message };
  return { code: grpc.status.INTERNAL, details: 'CSR signing error' };
}

/**
 * `istio.v1.auth.IstioCertificateService/CreateCertificate` (istio `security/pkg/server/ca/server.go`): authenticate the Bearer token, allow
 * `ImpersonatedIdentity` only for trusted node accounts and only for service accounts with a pod on the caller's
 * node, require the CSR's SAN to be exactly the identity being signed, and answer leaf, intermediates, root bundle.
 */
export class CaServer {
  private readonly metrics: ReturnType<typeof caMetrics>;

  constructor(
    private readonly config: IstiodConfig,
    private readonly ca: CertificateAuthority,
    private readonly auth: CallerAuthenticator,
    private readonly nodes: NodeAuthorizer,
    metricsRegistry: MetricsRegistry,
    private readonly log: Logger,
  ) {
    this.metrics = caMetrics(metricsRegistry);
  }

  /** Counts a call the authentication interceptor rejected before it reached `handlers`. */
  countRejected(method: string): void {
    if (method !== CREATE_CERTIFICATE_PATH) return;
    this.metrics.csr.inc();
    this.metrics.authnFailure.inc();
  }

  readonly handlers = {
    createCertificate: (
      call: grpc.ServerUnaryCall<IstioCertificateRequest, IstioCertificateResponse>,
      cb: grpc.sendUnaryData<Partial<IstioCertificateResponse>>,
    ): void => {
      this.metrics.csr.inc();
      this.create(call.request, call.metadata).then(
        (certChain) => {
          this.metrics.issued.inc();
          cb(null, { certChain });
        },
        (e: unknown) => {
          if (isMeshError(e, 'ISTIOD_ERR_AUTHENTICATION') || isMeshError(e, 'ISTIOD_ERR_IMPERSONATION'))
            this.metrics.authnFailure.inc();
          else this.metrics.signError.inc();
          this.log.warn({ error: describeError(e) }, 'CSR rejected');
          cb(grpcError(e));
        },
      );
    },
  };

  async create(req: IstioCertificateRequest, md: grpc.Metadata): Promise<string[]> {
    const caller = await authenticatedCaller(this.auth, md);
    const target = this.targetIdentity(caller, req);
    const uri = identityToString(target);
    let sans: string[];
    try {
      sans = csrUriSans(req.csr);
    } catch (e) {
      throw new MeshError('ISTIOD_ERR_CSR', `cannot parse the CSR: ${describeError(e)}`);
    }
    if (sans.length !== 1 || sans[0] !== uri) {
      throw new MeshError(
        'ISTIOD_ERR_CSR',
        `the CSR asks for ${sans.length === 0 ? 'no URI SAN' : sans.join(', ')}, but the caller may only get ${uri}`,
      );
    }
    const requested = Number(req.validityDuration) * 1000;
    const ttlMs = Math.min(requested > 0 ? requested : this.config.defaultCertTtlMs, this.config.maxCertTtlMs);
    const chain = await this.ca.sign(req.csr, uri, Math.round(ttlMs / 1000));
    this.log.info(
      { identity: uri, caller: `${caller.namespace}/${caller.serviceAccount}`, ttlSeconds: Math.round(ttlMs / 1000) },
      'certificate issued',
    );
    return chain;
  }

  private targetIdentity(caller: Caller, req: IstioCertificateRequest): Identity {
    const own: Identity = {
      trustDomain: this.config.trustDomain,
      namespace: caller.namespace,
      serviceAccount: caller.serviceAccount,
    };
    const imp = req.metadata?.[IMPERSONATED_IDENTITY];
    if (imp === undefined) return own;
    const deny = (why: string): never => {
      throw new MeshError('ISTIOD_ERR_IMPERSONATION', `request impersonation authentication failure: ${why}`);
    };
    if (typeof imp !== 'string') return deny(`${IMPERSONATED_IDENTITY} must be a string`);
    const account = `${caller.namespace}/${caller.serviceAccount}`;
    if (!this.config.trustedNodeAccounts.includes(account))
      return deny(`${account} is not in CA_TRUSTED_NODE_ACCOUNTS (${this.config.trustedNodeAccounts.join(', ')})`);
    let id: Identity;
    try {
      id = parseIdentity(imp);
    } catch (e) {
      return deny(describeError(e));
    }
    if (id.trustDomain !== this.config.trustDomain)
      return deny(`trust domain "${id.trustDomain}" is not ours ("${this.config.trustDomain}")`);
    const denied = this.nodes.denial(caller, id);
    if (denied !== undefined) return deny(denied);
    return id;
  }
}
