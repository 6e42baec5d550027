/**
 * Conversion between the versions one stored kind is served at, as k8s.io/apiextensions-apiserver's `nopConverter`
 * does it for a CRD with conversion strategy `None` (Istio's CRDs and the Gateway API's declare it): the versions
 * share one schema, so an object is stored once, at the storage version, and a request at another served version
 * differs from one at the storage version only in `apiVersion`. Bodies are rewritten to the storage version on the
 * way in, answers (objects, lists, watch events, Table rows) to the request's version on the way out. The other
 * versions are entries of the kinds table with `storageVersion` set (`kinds.ts`); everything keyed by group and
 * resource (the store's keys, RBAC, field selectors, printer columns, the garbage collector's owners) is the same
 * for all of them.
 */
import { ApiError } from './api-error.js';
import type { KindInfo } from './kind-info.js';
import { apiVersionOf, findKind } from './kinds.js';
import { isRecord } from '../lib/record.js';

/** The kind a request at `k`'s version reads and writes in the store: `k` itself unless it is another served version. */
export function storageKindOf(k: KindInfo): KindInfo {
  if (k.storageVersion === undefined) return k;
  return findKind(k.group, k.storageVersion, k.plural) ?? k;
}

/**
 * `o` (an object, a list of them, or a watch event's object) as a client of `k`'s version reads it: with that
 * version's apiVersion. Status objects and other kinds pass unchanged.
 */
export function inServedVersion<T>(k: KindInfo, o: T): T {
  if (k.storageVersion === undefined || !isRecord(o)) return o;
  const stored = apiVersionOf(storageKindOf(k));
  const apiVersion = apiVersionOf(k);
  if (o.kind === `${k.kind}List` && Array.isArray(o.items))
    return { ...o, apiVersion, items: o.items.map((i: unknown) => inServedVersion(k, i)) };
  return o.kind === k.kind && o.apiVersion === stored ? { ...o, apiVersion } : o;
}

/**
 * A request body (an object, or a merge patch) sent to `k`'s version as the store keeps it: with the stored
 * version's apiVersion. A body naming another apiVersion is refused as kube-apiserver's handlers refuse it.
 */
export function toStoredVersion<T>(k: KindInfo, body: T): T {
  if (k.storageVersion === undefined || !isRecord(body) || typeof body.apiVersion !== 'string') return body;
  const apiVersion = apiVersionOf(k);
  if (body.apiVersion !== apiVersion)
    throw new ApiError(
      'BadRequest',
      `the API version in the data (${body.apiVersion}) does not match the expected API version (${apiVersion})`,
    );
  return { ...body, apiVersion: apiVersionOf(storageKindOf(k)) };
}
