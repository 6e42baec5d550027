/**
 * istiod's self-signed CA when it runs on Kubernetes without a plug-in CA, kept in `istio-ca-secret`
 * (istio-ca-secret.ts) as Istio's istiod keeps it (istio `security/pkg/pki/ca/ca.go` NewSelfSignedIstioCAOptions):
 * the Secret is read when it exists; else a new root is made and the Secret created with it. A replica that loses
 * the race to create it (AlreadyExists) reads the winner's at once, so all replicas sign with one root.
 *
 * Every failure (the API unreachable, istiod's namespace missing, a Secret that does not hold a usable CA) is
 * retried with Istio's backoff (pkg/backoff DefaultOption over cenkalti's defaults: 0.5 s growing by 1.5 up to
 * 60 s, ±50 % jitter) for up to 20 minutes (pilot/pkg/bootstrap/istio_ca.go createSelfSignedCACertificateOptions),
 * each logged with its reason; then istiod does not start. A malformed Secret is never overwritten: fixing it
 * lets a waiting istiod start; deleting it makes the next attempt mint a new root, which every ztunnel then has to
 * learn.
 *
 * The root is ECDSA P-256, where Istio's is RSA (CITADEL_SELF_SIGNED_CA_RSA_KEY_SIZE, 2048, is not read): every key
 * amesh makes is P-256, like ztunnel's workload keys, which keeps chains small and signing cheap; Istio's istiod
 * reads such a Secret (its ParsePemEncodedKey takes PKCS#8 EC keys), and amesh signs with an RSA one Istio wrote.
 * Its subject is `O=<trust domain>` and it lives CITADEL_SELF_SIGNED_CA_CERT_TTL, as Istio's.
 *
 * Not implemented: Istio's root rotator (security/pkg/pki/ca/selfsignedcarootcertrotator.go, with
 * CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL, CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE and
 * CITADEL_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR), which renews the root before it expires and reloads a root another
 * replica wrote: the Secret is read once, at start. Nor USE_CACERTS_FOR_SELF_SIGNED_CA (the self-signed CA kept in
 * `cacerts` instead).
 */
import type { V1Secret } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError, isMeshError, MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { createSelfSignedRootPem } from '../../lib/pki/ca-certificates.js';
import type { SigningCa } from '../../lib/pki/signing-ca.js';
import { describeKubeError, kubeStatus } from '../../kube/kube-status.js';
import { ISTIO_CA_SECRET, istioCaSecret, signingCaFromSecret } from './istio-ca-secret.js';

/** The Secret calls made: CoreV1Api's. */
export interface CaSecretApi {
  readNamespacedSecret(p: { name: string; namespace: string }): Promise<V1Secret>;
  createNamespacedSecret(p: { namespace: string; body: V1Secret }): Promise<V1Secret>;
}

export interface SelfSignedCaSecretOptions {
  /** istiod's namespace (POD_NAMESPACE). */
  readonly namespace: string;
  /** The root's organisation. */
  readonly trustDomain: string;
  readonly rootTtlMs: number;
  /** How long failures are retried before istiod gives up. */
  readonly timeoutMs: number;
}

/** pkg/backoff DefaultOption and cenkalti/backoff's multiplier and randomization factor. */
const BACKOFF = { initialMs: 500, maxMs: 60_000, multiplier: 1.5, jitter: 0.5 } as const;

/** The CA in istio-ca-secret, created first if there is none; retried as the file comment says. */
export async function loadOrCreateCaSecret(
  api: CaSecretApi,
  o: SelfSignedCaSecretOptions,
  log: Logger,
): Promise<SigningCa> {
  const secret = `${o.namespace}/${ISTIO_CA_SECRET}`;
  const deadline = Date.now() + o.timeoutMs;
  let interval: number = BACKOFF.initialMs;
  for (;;) {
    try {
      return await attempt(api, o, log);
    } catch (e) {
      const err = isMeshError(e) ? e : new MeshError('ISTIOD_ERR_KUBE_API', (e as Error).message, { cause: e });
      const wait = Math.min(interval * (1 + BACKOFF.jitter * (2 * Math.random() - 1)), deadline - Date.now());
      if (wait <= 0) {
        if (o.timeoutMs <= 0) throw err;
        throw new MeshError(err.code, `${err.message} (gave up after retrying for ${o.timeoutMs / 1000} s)`, {
          cause: err,
        });
      }
      log.warn({ secret, error: describeError(err), retryInMs: Math.round(wait) }, 'no usable CA yet');
      await sleep(wait);
      interval = Math.min(interval * BACKOFF.multiplier, BACKOFF.maxMs);
    }
  }
}

async function attempt(api: CaSecretApi, o: SelfSignedCaSecretOptions, log: Logger): Promise<SigningCa> {
  const secret = `${o.namespace}/${ISTIO_CA_SECRET}`;
  const read = async (): Promise<SigningCa | undefined> => {
    let found: V1Secret;
    try {
      found = await api.readNamespacedSecret({ name: ISTIO_CA_SECRET, namespace: o.namespace });
    } catch (e) {
      if (kubeStatus(e)?.reason === 'NotFound') return undefined;
      throw new MeshError('ISTIOD_ERR_KUBE_API', `cannot read Secret ${secret}: ${describeKubeError(e)}`, { cause: e });
    }
    const ca = signingCaFromSecret(found);
    log.info({ secret, root: ca.caCert.fingerprint256 }, 'signing with the self-signed CA from its Secret');
    return ca;
  };
  const existing = await read();
  if (existing !== undefined) return existing;
  const { certPem, keyPem } = await createSelfSignedRootPem(`O=${o.trustDomain}`, o.rootTtlMs);
  const body = istioCaSecret(o.namespace, certPem, keyPem);
  try {
    await api.createNamespacedSecret({ namespace: o.namespace, body });
  } catch (e) {
    // Another replica created it meanwhile: sign with its root.
    if (kubeStatus(e)?.reason === 'AlreadyExists') {
      const theirs = await read();
      if (theirs !== undefined) return theirs;
    }
    throw new MeshError('ISTIOD_ERR_KUBE_API', `cannot create Secret ${secret}: ${describeKubeError(e)}`, {
      cause: e,
    });
  }
  const ca = signingCaFromSecret(body);
  log.info({ secret, root: ca.caCert.fingerprint256 }, 'created a self-signed CA and stored it in its Secret');
  return ca;
}
