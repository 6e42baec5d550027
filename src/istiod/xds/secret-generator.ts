/**
 * Gateway credentials over SDS, as istio `pilot/pkg/xds/sds.go` serves them: Envoy's
 * `envoy.extensions.transport_sockets.tls.v3.Secret`, on the same delta ADS stream, by name only. A name is
 * - `kubernetes-gateway://<namespace>/<Secret>`: a Gateway API listener's certificateRef. Served only when istiod
 *   itself put that name in a listener of a gateway of the caller's namespace (the reference is then in the
 *   Gateway's namespace, or a ReferenceGrant opens it): istio's `VerifiedCertificateReferences`;
 * - `kubernetes://<Secret>` or `kubernetes://<namespace>/<Secret>`: an Istio Gateway's `credentialName`. Served only
 *   from the caller's own namespace, and only when a SubjectAccessReview says the caller's service account may list
 *   Secrets there (istio `pilot/pkg/credentials/kube/secrets.go` `Authorize`);
 * - `configmap://<namespace>/<ConfigMap>-cacert`: a Gateway's frontend caCertificateRef to a ConfigMap, its
 *   `ca.crt` (or `cacert`), served to any caller as Istio serves it: a CA certificate is not a secret.
 * Names the caller may not have are left out, never answered with an error, and istiod's log says which and why.
 * The certificate and key come from the Secret's `cert`/`key` or `tls.crt`/`tls.key`; a Secret that changes is
 * pushed again (rotation), and one without a usable pair is not served. A name ending in `-cacert` is the CA that
 * client certificates are verified against (a `validation_context`): the Secret of that very name, else the one
 * without the suffix, its `cacert` or `ca.crt` (istio's `GetCaCert`); it is authorized as the name without it.
 *
 * SubjectAccessReview answers are kept for SAR_CACHE_MS per service account, as istio caches them, so that a
 * gateway re-subscribing does not cost the API server a review each time.
 */
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { SecretSchema } from '../../api/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { describeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { RestartingInformer } from '../../kube/informer.js';
import { kubeRequest } from '../../kube/kube-request.js';
import type { SharedInformerFactory } from '../../kube/shared-informer-factory.js';
import type { Caller } from '../ca/authenticate.js';
import { extractCertInfo, extractRoot } from '../credentials/cert-info.js';
import { version, type XdsResource } from './convert.js';

export const SECRET_TYPE = `type.googleapis.com/${SecretSchema.typeName}`;
/** How long a SubjectAccessReview's answer is kept for a service account. */
const SAR_CACHE_MS = 60_000;
/** Connections whose last refusal is remembered, so that it is not logged again on every model change. */
const DENIALS_REMEMBERED = 1024;

interface SecretObject extends KubernetesObject {
  data?: Record<string, string>;
}
/** A ConfigMap's `data` is text, not base64. */
type ConfigMapObject = SecretObject;

/** A type served per caller: what it may subscribe to, and each resource as that caller gets it. */
export interface CallerGenerator {
  /** The names of `names` the caller may have. */
  authorize(caller: Caller, connection: string, names: readonly string[]): Promise<string[]>;
  resource(caller: Caller, name: string): XdsResource | undefined;
}

/** The suffix of a name for a credential's CA certificate (istio `security/pkg/model` `SdsCaSuffix`). */
const CA_SUFFIX = '-cacert';

/** A name → the Secret it names for a caller of `callerNamespace`, and which kind of reference it is. */
function parseName(
  name: string,
  callerNamespace: string,
): { kind: 'gateway' | 'credential' | 'configmap'; namespace: string; secret: string } | undefined {
  for (const [prefix, kind] of [
    ['kubernetes-gateway://', 'gateway'],
    ['kubernetes://', 'credential'],
    ['configmap://', 'configmap'],
  ] as const) {
    if (!name.startsWith(prefix)) continue;
    const rest = name.slice(prefix.length).split('/');
    if (rest.length === 1 && kind === 'credential') return { kind, namespace: callerNamespace, secret: rest[0]! };
    const [namespace = '', secret = ''] = rest;
    // A ConfigMap is only ever a CA: its name carries the suffix.
    if (rest.length === 2 && namespace !== '' && secret !== '' && (kind !== 'configmap' || secret.endsWith(CA_SUFFIX)))
      return { kind, namespace, secret };
    return undefined;
  }
  return undefined;
}

export class SecretGenerator implements CallerGenerator {
  private readonly secrets: RestartingInformer<SecretObject>;
  private readonly configMaps: RestartingInformer<ConfigMapObject>;
  private readonly reviews = new Map<string, { at: number; allowed: boolean; reason: string }>();
  private readonly encoded = new Map<string, { resourceVersion: string; resource: XdsResource | undefined }>();
  /** What was last said of each connection's refused names (oldest first). */
  private readonly lastDenial = new Map<string, string>();
  /** Names whose Secret is missing, said once until it appears. */
  private readonly missing = new Set<string>();

  constructor(
    private readonly kc: KubeConfig,
    informers: SharedInformerFactory,
    /** The credential names istiod put in the listeners of the gateways of `namespace`. */
    private readonly verified: (namespace: string) => ReadonlySet<string>,
    /** Called when a Secret changes, so that its subscribers are pushed again. */
    changed: () => void,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.secrets = informers.informerFor<SecretObject>('/api/v1/secrets');
    const gone = (s: SecretObject): void => {
      const suffix = `\n${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
      for (const key of this.encoded.keys()) if (key.endsWith(suffix)) this.encoded.delete(key);
      changed();
    };
    this.secrets.addEventHandler({ add: changed, update: changed, delete: gone });
    this.configMaps = informers.informerFor<ConfigMapObject>('/api/v1/configmaps');
    this.configMaps.addEventHandler({ add: changed, update: changed, delete: changed });
  }

  async authorize(caller: Caller, connection: string, names: readonly string[]): Promise<string[]> {
    const allowed: string[] = [];
    const denied: string[] = [];
    let why = 'cross namespace secret reference requires ReferenceGrant';
    for (const n of names) {
      const ref = parseName(n, caller.namespace);
      if (ref === undefined) {
        denied.push(n);
        why = 'not a kubernetes://, kubernetes-gateway:// or configmap:// resource name';
        continue;
      }
      if (ref.kind === 'configmap') {
        allowed.push(n);
        continue;
      }
      if (ref.kind === 'gateway') {
        if (this.verified(caller.namespace).has(n)) allowed.push(n);
        else denied.push(n);
        continue;
      }
      if (ref.namespace !== caller.namespace) {
        denied.push(n);
        continue;
      }
      const review = await this.review(caller);
      if (review.allowed) allowed.push(n);
      else {
        denied.push(n);
        why = review.reason;
      }
    }
    // Said once per connection while it stays the same: authorization runs again on every model change.
    const said = denied.length === 0 ? '' : `${denied.join(' ')}\n${why}`;
    if (this.lastDenial.get(connection) === said) return allowed;
    this.lastDenial.delete(connection);
    this.lastDenial.set(connection, said);
    if (this.lastDenial.size > DENIALS_REMEMBERED) this.lastDenial.delete(this.lastDenial.keys().next().value!);
    if (denied.length > 0)
      this.log.warn(
        {
          connection,
          caller: `${caller.namespace}/${caller.serviceAccount}`,
          denied: denied.slice(0, 3),
          more: Math.max(0, denied.length - 3),
          error: why,
        },
        'proxy attempted to access unauthorized certificates',
      );
    return allowed;
  }

  resource(caller: Caller, name: string): XdsResource | undefined {
    const ref = parseName(name, caller.namespace);
    if (ref === undefined) return undefined;
    if (ref.kind === 'configmap') return this.configMapCa(name, ref.namespace, ref.secret.slice(0, -CA_SUFFIX.length));
    const ca = ref.secret.endsWith(CA_SUFFIX);
    const failed = ca ? 'SDS: failed to fetch ca certificate' : 'SDS: failed to fetch key and certificate';
    const secret =
      ca && this.secrets.get(ref.secret, ref.namespace) === undefined
        ? ref.secret.slice(0, -CA_SUFFIX.length)
        : ref.secret;
    const s = this.secrets.get(secret, ref.namespace);
    if (s === undefined) {
      if (!this.missing.has(name))
        this.log.warn({ name, error: `secret ${ref.namespace}/${secret} not found` }, failed);
      this.missing.add(name);
      return undefined;
    }
    this.missing.delete(name);
    const key = `${name}\n${ref.namespace}/${secret}`;
    const rv = s.metadata?.resourceVersion ?? '';
    const cached = this.encoded.get(key);
    if (cached?.resourceVersion === rv) return cached.resource;
    let type: MessageInitShape<typeof SecretSchema>['type'] | string;
    if (ca) {
      const root = extractRoot(s.data);
      type =
        typeof root === 'string'
          ? root
          : { case: 'validationContext', value: { trustedCa: { specifier: { case: 'inlineBytes', value: root } } } };
    } else {
      const info = extractCertInfo(s.data);
      type =
        typeof info === 'string'
          ? info
          : {
              case: 'tlsCertificate',
              value: {
                certificateChain: { specifier: { case: 'inlineBytes', value: info.cert } },
                privateKey: { specifier: { case: 'inlineBytes', value: info.key } },
              },
            };
    }
    let resource: XdsResource | undefined;
    if (typeof type === 'string') this.log.warn({ secret: `${ref.namespace}/${secret}`, error: type }, failed);
    else {
      const msg = create(SecretSchema, { name, type });
      resource = { name, version: version(toBinary(SecretSchema, msg)), resource: anyPack(SecretSchema, msg) };
    }
    this.encoded.set(key, { resourceVersion: rv, resource });
    return resource;
  }

  /** A ConfigMap's CA certificate as a validation context (istio's `GetConfigMapCaCert`). */
  private configMapCa(name: string, namespace: string, configMap: string): XdsResource | undefined {
    const cm = this.configMaps.get(configMap, namespace);
    const data = Object.fromEntries(
      Object.entries(cm?.data ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    );
    const root = cm === undefined ? `configmap ${namespace}/${configMap} not found` : extractRoot(data);
    if (typeof root === 'string') {
      if (!this.missing.has(name)) this.log.warn({ name, error: root }, 'SDS: failed to fetch ca certificate');
      this.missing.add(name);
      return undefined;
    }
    this.missing.delete(name);
    const msg = create(SecretSchema, {
      name,
      type: { case: 'validationContext', value: { trustedCa: { specifier: { case: 'inlineBytes', value: root } } } },
    });
    return { name, version: version(toBinary(SecretSchema, msg)), resource: anyPack(SecretSchema, msg) };
  }

  /** Whether `caller`'s service account may list Secrets in its namespace, asked of the API server. */
  private async review(caller: Caller): Promise<{ allowed: boolean; reason: string }> {
    const user = `system:serviceaccount:${caller.namespace}:${caller.serviceAccount}`;
    const cached = this.reviews.get(user);
    if (cached !== undefined && this.now() - cached.at < SAR_CACHE_MS) return cached;
    let answer: { allowed: boolean; reason: string };
    try {
      const res = await kubeRequest(this.kc, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user, resourceAttributes: { namespace: caller.namespace, verb: 'list', resource: 'secrets' } },
      });
      const status = (res.body as { status?: { allowed?: boolean; reason?: string } } | undefined)?.status;
      answer =
        res.statusCode === 201 || res.statusCode === 200
          ? {
              allowed: status?.allowed === true,
              reason: `${caller.serviceAccount}/${caller.namespace} is not authorized to read secrets: ${status?.reason ?? ''}`,
            }
          : { allowed: false, reason: `SubjectAccessReview failed: HTTP ${res.statusCode}` };
    } catch (e) {
      answer = { allowed: false, reason: `SubjectAccessReview failed: ${describeError(e)}` };
    }
    // A failed review is not kept: the next subscription asks again.
    if (!answer.reason.startsWith('SubjectAccessReview failed')) this.reviews.set(user, { at: this.now(), ...answer });
    return answer;
  }
}
