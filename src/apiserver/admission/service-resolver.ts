/**
 * Where a webhook's `clientConfig.service` is reached: through the Service's endpoints, as kube-apiserver's
 * endpoint resolver does (k8s.io/apiserver `pkg/util/proxy` ResolveEndpoint). The service port named by the
 * webhook gives the port name; a ready endpoint of the Service's EndpointSlices (`kubernetes.io/service-name`)
 * with that port is picked at random. The TLS server name stays `<service>.<namespace>.svc`.
 */
import { randomInt } from 'node:crypto';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { findKind } from '../kinds.js';
import { asArray, asNumber, asObject, asString, objectsOf } from '../validation/json-fields.js';

const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const SERVICES = findKind('', 'v1', 'services') as KindInfo;
const ENDPOINT_SLICES = findKind('discovery.k8s.io', 'v1', 'endpointslices') as KindInfo;

/** What the resolver reads: the store's lookups. */
export interface ServiceLookups {
  find(k: KindInfo, namespace: string, name: string): KubeObject | undefined;
  listInNamespace(k: KindInfo, namespace: string): readonly KubeObject[];
}

/** A resolution that failed, worded as kube-apiserver's resolver words it. */
export class ServiceResolutionError extends Error {}

export interface ResolvedEndpoint {
  readonly host: string;
  readonly port: number;
}

export function resolveServiceEndpoint(
  lookups: ServiceLookups,
  namespace: string,
  name: string,
  port: number,
): ResolvedEndpoint {
  const svc = lookups.find(SERVICES, namespace, name);
  if (svc === undefined) throw new ServiceResolutionError(`service "${name}" not found`);
  const spec = asObject(svc.spec) ?? {};
  const svcPort = objectsOf(spec.ports).find((p) => asNumber(p.port) === port);
  if (svcPort === undefined)
    throw new ServiceResolutionError(`no service port ${String(port)} found for service "${name}"`);
  const portName = asString(svcPort.name) ?? '';
  const candidates: ResolvedEndpoint[] = [];
  for (const slice of lookups.listInNamespace(ENDPOINT_SLICES, namespace)) {
    if (slice.metadata.labels?.[SERVICE_NAME_LABEL] !== name) continue;
    const slicePort = objectsOf(slice.ports).find((p) => (asString(p.name) ?? '') === portName);
    const target = asNumber(slicePort?.port);
    if (target === undefined) continue;
    for (const ep of objectsOf(slice.endpoints)) {
      if (asObject(ep.conditions)?.ready === false) continue;
      const address = asString((asArray(ep.addresses) ?? [])[0]);
      if (address !== undefined) candidates.push({ host: address, port: target });
    }
  }
  const picked = candidates[candidates.length > 1 ? randomInt(candidates.length) : 0];
  if (picked === undefined) throw new ServiceResolutionError(`no endpoints available for service "${name}"`);
  return picked;
}
