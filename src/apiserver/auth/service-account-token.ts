/**
 * TokenRequest (authentication.k8s.io/v1, `create serviceaccounts/<name>/token`): a signed service-account JWT,
 * as kube-apiserver issues it. Follows kubernetes pkg/registry/core/serviceaccount/storage/token.go (defaults,
 * name checks, bound objects, the UID conflict), pkg/apis/authentication/validation (the 10-minute minimum) and
 * pkg/serviceaccount/claims.go (the claims, with the ServiceAccountTokenJTI and ServiceAccountTokenPodNodeInfo
 * features on, as they are by default since Kubernetes 1.30). Not carried over: the 3607-second "extend
 * expiration" transition hack for kubelet-projected tokens, and a maximum expiration (off by default upstream).
 *
 * Storage comes in as lookups, so the issuer works on any store.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { ApiError, invalid } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';
import { SERVICE_ACCOUNT_ALG, type ServiceAccountSigningKey } from './cluster-credentials.js';
import { serviceAccountUsername } from './user-info.js';
import { kubeTime } from '../../lib/kube-time.js';
import { isRecord } from '../../lib/record.js';

/** kube-apiserver's `--service-account-issuer` as kubeadm and most distributions set it. */
export const DEFAULT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
/** The v1 default of `spec.expirationSeconds` (SetDefaults_TokenRequestSpec). */
export const DEFAULT_EXPIRATION_SECONDS = 3600;
/** Tokens shorter than 10 minutes are refused (ValidateTokenRequest). */
export const MIN_EXPIRATION_SECONDS = 600;
/** And longer than 2^32 seconds. */
export const MAX_EXPIRATION_SECONDS = 2 ** 32;

const TOKEN_REQUEST_GROUP = 'authentication.k8s.io';
const TOKEN_REQUEST_API_VERSION = `${TOKEN_REQUEST_GROUP}/v1`;

type Found = KubeObject | undefined;
/** Reads the objects a token names; undefined when absent. */
export interface ObjectLookups {
  getServiceAccount(namespace: string, name: string): Promise<Found> | Found;
  getPod(namespace: string, name: string): Promise<Found> | Found;
  getSecret(namespace: string, name: string): Promise<Found> | Found;
  getNode(name: string): Promise<Found> | Found;
}

/** A name and UID in the `kubernetes.io` claim. */
export interface ObjectRefClaim {
  name: string;
  uid: string;
}

/** The private `kubernetes.io` claim (claims.go `kubernetes`), keys as Kubernetes writes them. */
export interface KubernetesClaim {
  namespace: string;
  node?: ObjectRefClaim;
  pod?: ObjectRefClaim;
  secret?: ObjectRefClaim;
  serviceaccount: ObjectRefClaim;
}

export interface ServiceAccountTokenIssuerOptions {
  readonly key: ServiceAccountSigningKey;
  /** `iss` of every token; default {@link DEFAULT_ISSUER}. */
  readonly issuer?: string;
  /** `--api-audiences`: the audiences of a request that names none; default the issuer, as kube-apiserver. */
  readonly apiAudiences?: readonly string[];
  readonly lookups: ObjectLookups;
  /** Milliseconds since the epoch; tests move it. */
  readonly now?: () => number;
}

const notFound = (resource: string, name: string): ApiError =>
  new ApiError('NotFound', `${resource} "${name}" not found`, { name, group: '', kind: resource });
const badBody = (why: string): ApiError =>
  new ApiError('BadRequest', `TokenRequest in version "v1" cannot be handled as a TokenRequest: ${why}`);

interface BoundObjectRef {
  kind: string;
  apiVersion: string;
  name: string;
  uid: string;
}

/** Reads the fields of a TokenRequest body that issuing uses; wrong types are a 400, as a failed decode is. */
function decodeTokenRequest(body: unknown): {
  meta: Record<string, unknown>;
  audiences: string[] | undefined;
  expirationSeconds: number;
  bound: BoundObjectRef | undefined;
} {
  if (!isRecord(body)) throw badBody('the body is not a JSON object');
  if (body['kind'] !== undefined && body['kind'] !== 'TokenRequest')
    throw badBody(`kind is ${JSON.stringify(body['kind'])}`);
  if (body['apiVersion'] !== undefined && body['apiVersion'] !== TOKEN_REQUEST_API_VERSION)
    throw badBody(`apiVersion is ${JSON.stringify(body['apiVersion'])}`);
  const meta = body['metadata'] ?? {};
  if (!isRecord(meta)) throw badBody('metadata is not an object');
  const spec = body['spec'] ?? {};
  if (!isRecord(spec)) throw badBody('spec is not an object');
  const auds = spec['audiences'];
  if (auds !== undefined && auds !== null && !(Array.isArray(auds) && auds.every((a) => typeof a === 'string')))
    throw badBody('spec.audiences is not a list of strings');
  const exp = spec['expirationSeconds'] ?? DEFAULT_EXPIRATION_SECONDS;
  if (typeof exp !== 'number' || !Number.isInteger(exp)) throw badBody('spec.expirationSeconds is not an integer');
  const ref = spec['boundObjectRef'];
  let bound: BoundObjectRef | undefined;
  if (ref !== undefined && ref !== null) {
    if (!isRecord(ref)) throw badBody('spec.boundObjectRef is not an object');
    const str = (k: string): string => {
      const v = ref[k] ?? '';
      if (typeof v !== 'string') throw badBody(`spec.boundObjectRef.${k} is not a string`);
      return v;
    };
    bound = { kind: str('kind'), apiVersion: str('apiVersion'), name: str('name'), uid: str('uid') };
  }
  return { meta, audiences: Array.isArray(auds) && auds.length > 0 ? auds : undefined, expirationSeconds: exp, bound };
}

/** Issues service-account tokens for TokenRequests. */
export class ServiceAccountTokenIssuer {
  readonly issuer: string;
  readonly apiAudiences: readonly string[];
  private readonly now: () => number;

  constructor(private readonly opts: ServiceAccountTokenIssuerOptions) {
    this.issuer = opts.issuer ?? DEFAULT_ISSUER;
    this.apiAudiences = Object.freeze([...(opts.apiAudiences ?? [this.issuer])]);
    this.now = opts.now ?? Date.now;
  }

  /**
   * Answers `create serviceaccounts/<name>/token` in `namespace` with the TokenRequest `body`: the request,
   * defaulted, with `status.token` and `status.expirationTimestamp`. Throws ApiError as kube-apiserver answers:
   * 404 for a missing service account or bound object, 422 for a name mismatch or an expiration under 10 minutes,
   * 400 for an unsupported bound kind or a pod running as another service account, 409 when the bound object's
   * UID is not the one given.
   */
  async createToken(namespace: string, name: string, body: unknown): Promise<KubeObject> {
    const req = decodeTokenRequest(body);
    const fieldMismatch = (field: string, value: unknown, what: string): ApiError =>
      invalid('TokenRequest', TOKEN_REQUEST_GROUP, name, [
        {
          reason: 'FieldValueInvalid',
          field,
          message: `Invalid value: ${JSON.stringify(value)}: must match the service account ${what} if specified`,
        },
      ]);
    if (typeof req.meta['name'] === 'string' && req.meta['name'] !== '' && req.meta['name'] !== name)
      throw fieldMismatch('metadata.name', req.meta['name'], 'name');
    if (
      typeof req.meta['namespace'] === 'string' &&
      req.meta['namespace'] !== '' &&
      req.meta['namespace'] !== namespace
    )
      throw fieldMismatch('metadata.namespace', req.meta['namespace'], 'namespace');

    const sa = await this.opts.lookups.getServiceAccount(namespace, name);
    if (sa === undefined) throw notFound('serviceaccounts', name);
    const audiences = req.audiences ?? [...this.apiAudiences];
    const now = this.now();

    const exp = req.expirationSeconds;
    if (exp < MIN_EXPIRATION_SECONDS) throw invalidExpiration(exp, 'may not specify a duration less than 10 minutes');
    if (exp > MAX_EXPIRATION_SECONDS)
      throw invalidExpiration(exp, 'may not specify a duration larger than 2^32 seconds');

    const claim: KubernetesClaim = { namespace, serviceaccount: { name, uid: sa.metadata.uid ?? '' } };
    if (req.bound !== undefined) await this.bind(claim, namespace, name, req.bound);

    const nowSeconds = Math.floor(now / 1000);
    const token = await new SignJWT({
      aud: audiences,
      exp: nowSeconds + exp,
      iat: nowSeconds,
      iss: this.issuer,
      jti: randomUUID(),
      // Keys in the order Kubernetes' JSON has them (go-jose merges the claims through a map).
      'kubernetes.io': {
        namespace: claim.namespace,
        node: claim.node,
        pod: claim.pod,
        secret: claim.secret,
        serviceaccount: claim.serviceaccount,
      },
      nbf: nowSeconds,
      sub: serviceAccountUsername(namespace, name),
    })
      .setProtectedHeader({ alg: SERVICE_ACCOUNT_ALG, kid: this.opts.key.keyId })
      .sign(this.opts.key.privateKey);

    const spec: Record<string, unknown> = { audiences, expirationSeconds: exp };
    if (req.bound !== undefined) spec['boundObjectRef'] = req.bound;
    return {
      apiVersion: TOKEN_REQUEST_API_VERSION,
      kind: 'TokenRequest',
      metadata: { ...req.meta, name, namespace, creationTimestamp: kubeTime(now) },
      spec,
      status: { token, expirationTimestamp: kubeTime(now + exp * 1000) },
    };
  }

  /** Adds the bound object (and a pod's node) to `claim`, as token.go resolves `spec.boundObjectRef`. */
  private async bind(claim: KubernetesClaim, namespace: string, saName: string, ref: BoundObjectRef): Promise<void> {
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.slice(0, ref.apiVersion.indexOf('/')) : '';
    const version = ref.apiVersion.includes('/')
      ? ref.apiVersion.slice(ref.apiVersion.indexOf('/') + 1)
      : ref.apiVersion;
    const l = this.opts.lookups;
    let obj: KubeObject | undefined;
    if (group === '' && ref.kind === 'Pod') {
      obj = await l.getPod(namespace, ref.name);
      if (obj === undefined) throw notFound('pods', ref.name);
      const spec = isRecord(obj['spec']) ? obj['spec'] : {};
      // The ServiceAccount admission plugin sets an empty serviceAccountName to "default".
      const podSa =
        typeof spec['serviceAccountName'] === 'string' && spec['serviceAccountName'] !== ''
          ? spec['serviceAccountName']
          : 'default';
      if (podSa !== saName)
        throw new ApiError(
          'BadRequest',
          `cannot bind token for serviceaccount "${saName}" to pod running with different serviceaccount name.`,
        );
      claim.pod = { name: ref.name, uid: obj.metadata.uid ?? '' };
      const nodeName = spec['nodeName'];
      if (typeof nodeName === 'string' && nodeName !== '') {
        // A missing node leaves the node out of the token; the token is still issued (token.go).
        const node = await l.getNode(nodeName);
        if (node !== undefined) claim.node = { name: nodeName, uid: node.metadata.uid ?? '' };
      }
    } else if (group === '' && ref.kind === 'Node') {
      obj = await l.getNode(ref.name);
      if (obj === undefined) throw notFound('nodes', ref.name);
      claim.node = { name: ref.name, uid: obj.metadata.uid ?? '' };
    } else if (group === '' && ref.kind === 'Secret') {
      obj = await l.getSecret(namespace, ref.name);
      if (obj === undefined) throw notFound('secrets', ref.name);
      claim.secret = { name: ref.name, uid: obj.metadata.uid ?? '' };
    } else {
      throw new ApiError('BadRequest', `cannot bind token to object of type ${group}/${version}, Kind=${ref.kind}`);
    }
    if (ref.uid !== '' && ref.uid !== obj.metadata.uid) {
      throw new ApiError(
        'Conflict',
        `Operation cannot be fulfilled on ${ref.kind} "${ref.name}": the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
        { name: ref.name, group, kind: ref.kind },
      );
    }
  }
}

function invalidExpiration(value: number, message: string): ApiError {
  return invalid('TokenRequest', TOKEN_REQUEST_GROUP, '', [
    { reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${value}: ${message}` },
  ]);
}
