/**
 * An ingress gateway's certificates, fetched from istiod over SDS as Istio's gateways fetch them: Envoy's
 * `envoy.extensions.transport_sockets.tls.v3.Secret`, subscribed to by the names its listeners carry, on the same
 * delta ADS stream. The names follow the listeners: a push that adds or drops a certificate changes the
 * subscription. Each Secret's chain and key become one TLS context per listener (`contextFor`), made again when
 * istiod pushes a new version (rotation), with the CA certificates its clients' certificates must chain to when it
 * asks for them (a `validation_context`, the `-cacert` names); a Secret that is not a usable key pair or CA is NACKed
 * and the listener keeps the last good one. istiod sends nothing for a name the gateway may not use, so such a listener has no certificate
 * and its handshakes fail.
 */
import { createSecureContext, type SecureContext } from 'node:tls';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { SecretSchema } from '../api/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import type { DataSource } from '../api/envoy/config/core/v3/base_pb.js';
import type { Logger } from '../lib/log.js';
import type { NamedSubscription } from '../ztunnel/xds/ads-client.js';
import type { WaypointRules } from './waypoint-rules.js';

export const SECRET_TYPE = `type.googleapis.com/${SecretSchema.typeName}`;

interface KeyPair {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** The certificate's subject alternative names and expiry, for the config dump. */
  readonly subject: string;
  readonly validTo: string;
}

function bytes(d: DataSource | undefined): Buffer | undefined {
  const s = d?.specifier;
  if (s?.case === 'inlineBytes') return Buffer.from(s.value);
  if (s?.case === 'inlineString') return Buffer.from(s.value);
  return undefined;
}

export class GatewayCredentials {
  private readonly pairs = new Map<string, KeyPair>();
  /** CA certificates (PEM) by name, which clients' certificates are verified against. */
  private readonly cas = new Map<string, Buffer>();
  private readonly contexts = new Map<string, SecureContext>();
  private namesChanged: () => void = () => undefined;
  private readonly watchers: (() => void)[] = [];

  constructor(
    private readonly rules: WaypointRules,
    private readonly log: Logger,
  ) {
    rules.watch(() => this.namesChanged());
  }

  /** The names the listeners carry now. */
  private get names(): string[] {
    return [...new Set(this.rules.listeners.flatMap((l) => [...l.credentialNames, ...l.clientCaNames]))].sort();
  }

  subscription(): NamedSubscription {
    const names = (): string[] => this.names;
    return {
      typeUrl: SECRET_TYPE,
      get names() {
        return names();
      },
      watch: (f) => (this.namesChanged = f),
      apply: (resources, removed) => {
        const rejects: string[] = [];
        for (const r of resources) {
          const why = this.install(r.name, r.resource);
          if (why !== undefined) rejects.push(why);
        }
        for (const n of removed) {
          this.pairs.delete(n);
          this.cas.delete(n);
          this.log.info({ credential: n }, 'certificate withdrawn by istiod');
        }
        this.contexts.clear();
        for (const f of this.watchers) f();
        return rejects;
      },
    };
  }

  /** Calls `f` after each push of certificates. */
  watch(f: () => void): void {
    this.watchers.push(f);
  }

  /** The certificates and keys of `names` the gateway holds. */
  keyPairs(names: readonly string[]): readonly KeyPair[] {
    return names.flatMap((n) => this.pairs.get(n) ?? []);
  }

  /** The CA certificates of `names` the gateway holds. */
  caCertificates(names: readonly string[]): readonly Buffer[] {
    return names.flatMap((n) => this.cas.get(n) ?? []);
  }

  /**
   * The TLS context of a listener's certificates (several: one context holding each), with the CAs of `caNames` to
   * verify clients against; undefined when it has no certificate yet, or asks for client certificates and has no CA
   * yet (a handshake that cannot be verified is refused rather than let through unverified).
   */
  contextFor(names: readonly string[], caNames: readonly string[] = []): SecureContext | undefined {
    const have = this.keyPairs(names);
    const ca = this.caCertificates(caNames);
    if (have.length === 0 || (caNames.length > 0 && ca.length === 0)) return undefined;
    const key = `${names.join('\n')}\n\n${caNames.join('\n')}`;
    let ctx = this.contexts.get(key);
    if (ctx === undefined) {
      ctx = createSecureContext({
        cert: have.map((p) => p.cert),
        key: have.map((p) => p.key),
        minVersion: 'TLSv1.2',
        ...(ca.length > 0 ? { ca: [...ca] } : {}),
      });
      this.contexts.set(key, ctx);
    }
    return ctx;
  }

  dump(): object {
    return Object.fromEntries([...this.pairs].map(([n, p]) => [n, { subject: p.subject, validTo: p.validTo }]));
  }

  private install(
    name: string,
    resource: Parameters<NamedSubscription['apply']>[0][number]['resource'],
  ): string | undefined {
    try {
      const msg = resource === undefined ? undefined : anyUnpack(resource, SecretSchema);
      if (msg?.type.case === 'validationContext') {
        const ca = bytes(msg.type.value.trustedCa);
        if (ca === undefined) return `${name}: the CA certificate is not inline`;
        const x509 = new X509Certificate(ca);
        this.cas.set(name, ca);
        this.log.info({ credential: name, validTo: x509.validTo }, 'CA certificate applied');
        return undefined;
      }
      if (msg === undefined || msg.type.case !== 'tlsCertificate') return `${name}: not a TLS certificate Secret`;
      const cert = bytes(msg.type.value.certificateChain);
      const key = bytes(msg.type.value.privateKey);
      if (cert === undefined || key === undefined) return `${name}: the certificate chain or key is not inline`;
      const x509 = new X509Certificate(cert);
      if (!x509.checkPrivateKey(createPrivateKey(key))) return `${name}: the private key is not the certificate's`;
      this.pairs.set(name, { cert, key, subject: x509.subjectAltName ?? x509.subject, validTo: x509.validTo });
      this.log.info({ credential: name, validTo: x509.validTo }, 'certificate applied');
      return undefined;
    } catch (e) {
      this.log.error(
        { credential: name, error: (e as Error).message },
        'certificate rejected; keeping the last good one',
      );
      return `${name}: ${(e as Error).message}`;
    }
  }
}
