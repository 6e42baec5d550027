import { ipBytes } from '../../lib/ip.js';
import type { Manifest } from '../registry/manifest-dir.js';
import type { ServiceSelection } from './service-selection.js';
import { LbHealthPolicy, LbMode, LbScope, type PortModel, type ServiceModel } from './types.js';
import { asRecord } from '../../lib/record.js';

export interface ServicePortSpec {
  readonly port: number;
  /** A number, a port name (resolved against the pod's container ports), or undefined (same as port). */
  readonly targetPort: number | string | undefined;
}

export function servicePorts(svc: Manifest): ServicePortSpec[] {
  return (Array.isArray(svc.spec['ports']) ? svc.spec['ports'] : []).map(asRecord).flatMap((p) => {
    const port = Number(p['port']);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return [];
    return [{ port, targetPort: targetPortOf(p['targetPort']) }];
  });
}

/** A Service port's `targetPort` field: a number (also when written as digits), a port name, or undefined. */
function targetPortOf(t: unknown): number | string | undefined {
  if (typeof t === 'number') return t;
  if (typeof t !== 'string') return undefined;
  return /^\d+$/.test(t) ? Number(t) : t;
}

export function serviceHostname(svc: Manifest, domain: string): string {
  return `${svc.metadata.name}.${svc.metadata.namespace}.svc.${domain}`;
}

/** A Service's cluster IPs: `clusterIPs` when given, else the single `clusterIP`. */
function clusterIps(spec: Record<string, unknown>): string[] {
  if (Array.isArray(spec['clusterIPs'])) return spec['clusterIPs'].map(String);
  return typeof spec['clusterIP'] === 'string' ? [spec['clusterIP']] : [];
}

/** The target port the Service itself carries: the port when unset, 0 for a named one (each workload resolves it). */
function serviceTargetPort(p: ServicePortSpec): number {
  if (p.targetPort === undefined) return p.port;
  return typeof p.targetPort === 'number' ? p.targetPort : 0;
}

/** A Kubernetes Service → Service (istio `pilot/pkg/serviceregistry/ambient/` `constructService`). ExternalName services are not sent. */
export function convertService(svc: Manifest, domain: string): ServiceModel | undefined {
  const spec = svc.spec;
  if (spec['type'] === 'ExternalName') return undefined;
  const addresses = clusterIps(spec).flatMap((ip) => {
    const b = ipBytes(ip);
    return b === undefined ? [] : [{ network: '', address: new Uint8Array(b) }];
  });
  const ports: PortModel[] = servicePorts(svc).map((p) => ({ servicePort: p.port, targetPort: serviceTargetPort(p) }));
  let loadBalancing: ServiceModel['loadBalancing'];
  const distribution =
    spec['trafficDistribution'] ?? svc.metadata.annotations['networking.istio.io/traffic-distribution'];
  if (spec['internalTrafficPolicy'] === 'Local')
    loadBalancing = {
      routingPreference: [LbScope.NODE],
      mode: LbMode.STRICT,
      healthPolicy: LbHealthPolicy.ONLY_HEALTHY,
    };
  else if (distribution === 'PreferClose' || distribution === 'PreferSameZone')
    loadBalancing = {
      routingPreference: [LbScope.NETWORK, LbScope.REGION, LbScope.ZONE],
      mode: LbMode.FAILOVER,
      healthPolicy: LbHealthPolicy.ONLY_HEALTHY,
    };
  else if (distribution === 'PreferSameNode')
    loadBalancing = {
      routingPreference: [LbScope.NETWORK, LbScope.REGION, LbScope.ZONE, LbScope.SUBZONE, LbScope.NODE],
      mode: LbMode.FAILOVER,
      healthPolicy: LbHealthPolicy.ONLY_HEALTHY,
    };
  if (spec['publishNotReadyAddresses'] === true) {
    loadBalancing = {
      routingPreference: loadBalancing?.routingPreference ?? [],
      mode: loadBalancing?.mode ?? LbMode.UNSPECIFIED_MODE,
      healthPolicy: LbHealthPolicy.ALLOW_ALL,
    };
  }
  return {
    name: svc.metadata.name,
    namespace: svc.metadata.namespace,
    hostname: serviceHostname(svc, domain),
    addresses,
    ports,
    subjectAltNames: [],
    loadBalancing,
    canonical: true,
  };
}

/**
 * Something workloads can back: a Kubernetes Service (by selector) or one host of a ServiceEntry (by
 * workloadSelector). Workloads list the backends that select them, with target ports resolved for that workload.
 */
export interface ServiceBackend {
  /** `namespace/hostname` */
  readonly key: string;
  readonly namespace: string;
  readonly selector: Readonly<Record<string, string>>;
  readonly ports: readonly (ServicePortSpec & { readonly name: string | undefined })[];
  /** ServiceEntry ports resolve per endpoint by port name first; Service target ports default to the port. */
  readonly byPortName: boolean;
}

/** Backends of every Service, and of every ServiceEntry host its ServiceEntry won (`selection`). */
export function serviceBackends(
  objects: readonly Manifest[],
  domain: string,
  selection: ServiceSelection,
): ServiceBackend[] {
  const out: ServiceBackend[] = [];
  for (const o of objects) {
    if (o.kind === 'Service' && o.spec['type'] !== 'ExternalName') {
      const sel = asRecord(o.spec['selector']);
      if (Object.keys(sel).length === 0) continue;
      const names = (Array.isArray(o.spec['ports']) ? o.spec['ports'] : []).map((p) => asRecord(p)['name']);
      out.push({
        key: `${o.metadata.namespace}/${serviceHostname(o, domain)}`,
        namespace: o.metadata.namespace,
        selector: Object.fromEntries(Object.entries(sel).map(([k, v]) => [k, String(v)])),
        ports: servicePorts(o).map((p, i) => ({ ...p, name: typeof names[i] === 'string' ? names[i] : undefined })),
        byPortName: false,
      });
    } else if (o.kind === 'ServiceEntry') {
      const sel = asRecord(asRecord(o.spec['workloadSelector'])['labels']);
      if (Object.keys(sel).length === 0) continue;
      for (const host of serviceEntryHosts(o).filter((h) => selection.serves(o, h))) {
        out.push({
          key: `${o.metadata.namespace}/${host}`,
          namespace: o.metadata.namespace,
          selector: Object.fromEntries(Object.entries(sel).map(([k, v]) => [k, String(v)])),
          ports: serviceEntryPorts(o),
          byPortName: true,
        });
      }
    }
  }
  return out;
}

/** The service ports a workload serves for each backend that selects it, target ports resolved with `namedPorts`. */
export function backendsFor(
  backends: readonly ServiceBackend[],
  namespace: string,
  labels: Readonly<Record<string, string>>,
  namedPorts: Readonly<Record<string, number>>,
): Record<string, PortModel[]> {
  const out: Record<string, PortModel[]> = {};
  for (const b of backends) {
    if (b.namespace !== namespace || !Object.entries(b.selector).every(([k, v]) => labels[k] === v)) continue;
    out[b.key] = b.ports.flatMap((p) => {
      const target = backendTargetPort(p, b.byPortName, namedPorts);
      return target === undefined ? [] : [{ servicePort: p.port, targetPort: target }];
    });
  }
  return out;
}

/** One backend port's target on a workload with `namedPorts`; undefined when the name it needs is not there. */
function backendTargetPort(
  p: ServiceBackend['ports'][number],
  byPortName: boolean,
  namedPorts: Readonly<Record<string, number>>,
): number | undefined {
  if (byPortName) {
    const named = p.name === undefined ? undefined : namedPorts[p.name];
    return named ?? (typeof p.targetPort === 'number' ? p.targetPort : p.port);
  }
  if (p.targetPort === undefined) return p.port;
  return typeof p.targetPort === 'number' ? p.targetPort : namedPorts[p.targetPort];
}

export function serviceEntryHosts(se: Manifest): string[] {
  return Array.isArray(se.spec['hosts'])
    ? se.spec['hosts'].filter((h): h is string => typeof h === 'string' && h !== '')
    : [];
}

export function serviceEntryPorts(se: Manifest): (ServicePortSpec & { name: string | undefined })[] {
  return (Array.isArray(se.spec['ports']) ? se.spec['ports'] : []).map(asRecord).flatMap((p) => {
    const port = Number(p['number']);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return [];
    const t = Number(p['targetPort']);
    return [
      {
        port,
        targetPort: Number.isInteger(t) && t > 0 ? t : undefined,
        name: typeof p['name'] === 'string' ? p['name'] : undefined,
      },
    ];
  });
}

/**
 * A ServiceEntry → one Service per host it won (`selection`), canonical when it is the hostname's canonical one
 * (istio `pilot/pkg/serviceregistry/ambient/services.go`). Addresses may be CIDRs; `resolution: NONE` keeps the
 * original destination (PASSTHROUGH), as there is nothing to load-balance over.
 */
export function convertServiceEntry(se: Manifest, selection: ServiceSelection): ServiceModel[] {
  const addresses = (Array.isArray(se.spec['addresses']) ? se.spec['addresses'].map(String) : []).flatMap((a) => {
    const [ip = '', len] = a.split('/');
    const b = ipBytes(ip);
    if (b === undefined) return [];
    return [{ network: '', address: new Uint8Array(b), ...(len === undefined ? {} : { length: Number(len) }) }];
  });
  const ports: PortModel[] = serviceEntryPorts(se).map((p) => ({
    servicePort: p.port,
    targetPort: typeof p.targetPort === 'number' ? p.targetPort : p.port,
  }));
  const passthrough = se.spec['resolution'] === 'NONE';
  const sans = Array.isArray(se.spec['subjectAltNames']) ? se.spec['subjectAltNames'].map(String) : [];
  return serviceEntryHosts(se)
    .filter((h) => selection.serves(se, h))
    .map((hostname) => ({
      name: se.metadata.name,
      namespace: se.metadata.namespace,
      hostname,
      addresses,
      ports,
      subjectAltNames: sans,
      loadBalancing: passthrough
        ? { routingPreference: [], mode: LbMode.PASSTHROUGH, healthPolicy: LbHealthPolicy.ONLY_HEALTHY }
        : undefined,
      canonical: selection.isCanonical(se, hostname),
    }));
}
