import { ipBytes } from '../../lib/ip.js';
import type { Manifest } from '../registry/manifest-dir.js';
import { LbHealthPolicy, LbMode, LbScope, type PortModel, type ServiceModel } from './types.js';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

export interface ServicePortSpec {
  readonly port: number;
  /** A number, a port name (resolved against the pod's container ports), or undefined (same as port). */
  readonly targetPort: number | string | undefined;
}

export function servicePorts(svc: Manifest): ServicePortSpec[] {
  return (Array.isArray(svc.spec['ports']) ? svc.spec['ports'] : []).map(obj).flatMap((p) => {
    const port = Number(p['port']);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return [];
    const t = p['targetPort'];
    return [{ port, targetPort: typeof t === 'number' ? t : typeof t === 'string' ? (/^\d+$/.test(t) ? Number(t) : t) : undefined }];
  });
}

export function serviceHostname(svc: Manifest, domain: string): string {
  return `${svc.metadata.name}.${svc.metadata.namespace}.svc.${domain}`;
}

/** A Kubernetes Service → Service (spec §3.4 `constructService`). ExternalName services are not sent. */
export function convertService(svc: Manifest, domain: string): ServiceModel | undefined {
  const spec = svc.spec;
  if (spec['type'] === 'ExternalName') return undefined;
  const ips = Array.isArray(spec['clusterIPs']) ? spec['clusterIPs'].map(String) : typeof spec['clusterIP'] === 'string' ? [spec['clusterIP']] : [];
  const addresses = ips.flatMap((ip) => {
    const b = ipBytes(ip);
    return b === undefined ? [] : [{ network: '', address: new Uint8Array(b) }];
  });
  const ports: PortModel[] = servicePorts(svc).map((p) => ({ servicePort: p.port, targetPort: p.targetPort === undefined ? p.port : typeof p.targetPort === 'number' ? p.targetPort : 0 }));
  let loadBalancing: ServiceModel['loadBalancing'];
  const distribution = spec['trafficDistribution'] ?? svc.metadata.annotations['networking.istio.io/traffic-distribution'];
  if (spec['internalTrafficPolicy'] === 'Local') loadBalancing = { routingPreference: [LbScope.NODE], mode: LbMode.STRICT, healthPolicy: LbHealthPolicy.ONLY_HEALTHY };
  else if (distribution === 'PreferClose' || distribution === 'PreferSameZone') loadBalancing = { routingPreference: [LbScope.NETWORK, LbScope.REGION, LbScope.ZONE], mode: LbMode.FAILOVER, healthPolicy: LbHealthPolicy.ONLY_HEALTHY };
  else if (distribution === 'PreferSameNode') loadBalancing = { routingPreference: [LbScope.NETWORK, LbScope.REGION, LbScope.ZONE, LbScope.SUBZONE, LbScope.NODE], mode: LbMode.FAILOVER, healthPolicy: LbHealthPolicy.ONLY_HEALTHY };
  if (spec['publishNotReadyAddresses'] === true) {
    loadBalancing = { routingPreference: loadBalancing?.routingPreference ?? [], mode: loadBalancing?.mode ?? LbMode.UNSPECIFIED_MODE, healthPolicy: LbHealthPolicy.ALLOW_ALL };
  }
  return { name: svc.metadata.name, namespace: svc.metadata.namespace, hostname: serviceHostname(svc, domain), addresses, ports, subjectAltNames: [], loadBalancing, canonical: true };
}

/** True when the Service's selector (non-empty) matches `labels`. */
export function selects(svc: Manifest, labels: Readonly<Record<string, string>>): boolean {
  const sel = obj(svc.spec['selector']);
  const keys = Object.keys(sel);
  return keys.length > 0 && keys.every((k) => labels[k] === String(sel[k]));
}
