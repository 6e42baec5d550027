import { ipBytes } from '../../lib/ip.js';
import type { Manifest, Resource, ResourceOf } from '../registry/manifest-dir.js';
import type { ServiceSelection } from './service-selection.js';
import { appProtocolOfName, appProtocolOfServicePort } from './app-protocol.js';
import { autoAllocatedAddresses, shouldAutoAllocateIp, takesAutoAllocatedAddress } from './ip-autoallocation.js';
import {
  LbHealthPolicy,
  LbMode,
  LbScope,
  type NetworkAddressModel,
  type PortModel,
  type ServiceModel,
} from './types.js';

type Service = ResourceOf<'Service'>;
type ServiceEntry = ResourceOf<'ServiceEntry'>;

export interface ServicePortSpec {
  readonly port: number;
  /** A number, a port name (resolved against the pod's container ports), or undefined (same as port). */
  readonly targetPort: number | string | undefined;
  readonly appProtocol: number;
}

/** A port number in range (ports out of range are only warned about when checked); undefined otherwise. */
function inRange(port: number | null | undefined): number | undefined {
  return typeof port === 'number' && port >= 1 && port <= 65535 ? port : undefined;
}

export function servicePorts(svc: Service): ServicePortSpec[] {
  return (svc.spec.ports ?? []).flatMap((p) => {
    const port = inRange(p?.port);
    return port === undefined
      ? []
      : [{ port, targetPort: targetPortOf(p?.targetPort), appProtocol: appProtocolOfServicePort({ ...p, port }) }];
  });
}

/** A Service port's `targetPort` field: a number (also when written as digits), a port name, or undefined. */
function targetPortOf(t: number | string | null | undefined): number | string | undefined {
  if (typeof t === 'number') return t;
  if (typeof t !== 'string') return undefined;
  return /^\d+$/.test(t) ? Number(t) : t;
}

export function serviceHostname(svc: Pick<Manifest, 'metadata'>, domain: string): string {
  return `${svc.metadata.name}.${svc.metadata.namespace}.svc.${domain}`;
}

/** A Service's cluster IPs: `clusterIPs` when given, else the single `clusterIP`. */
function clusterIps(spec: Service['spec']): string[] {
  if (Array.isArray(spec.clusterIPs)) return spec.clusterIPs.map(String);
  return typeof spec.clusterIP === 'string' ? [spec.clusterIP] : [];
}

/** The target port the Service itself carries: the port when unset, 0 for a named one (each workload resolves it). */
function serviceTargetPort(p: ServicePortSpec): number {
  if (p.targetPort === undefined) return p.port;
  return typeof p.targetPort === 'number' ? p.targetPort : 0;
}

/** A Kubernetes Service → Service (istio `pilot/pkg/serviceregistry/ambient/` `constructService`). ExternalName services are not sent. */
export function convertService(svc: Service, domain: string): ServiceModel | undefined {
  const spec = svc.spec;
  if (spec.type === 'ExternalName') return undefined;
  const addresses = clusterIps(spec).flatMap((ip) => {
    const b = ipBytes(ip);
    return b === undefined ? [] : [{ network: '', address: new Uint8Array(b) }];
  });
  const ports: PortModel[] = servicePorts(svc).map((p) => ({
    servicePort: p.port,
    targetPort: serviceTargetPort(p),
    appProtocol: p.appProtocol,
  }));
  let loadBalancing: ServiceModel['loadBalancing'];
  const distribution = spec.trafficDistribution ?? svc.metadata.annotations['networking.istio.io/traffic-distribution'];
  if (spec.internalTrafficPolicy === 'Local')
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
  if (spec.publishNotReadyAddresses === true) {
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

/** A Kubernetes Service as a backend (its selector may be empty); none for an ExternalName Service. */
function kubeServiceBackend(o: Service, domain: string): ServiceBackend | undefined {
  if (o.spec.type === 'ExternalName') return undefined;
  const names = (o.spec.ports ?? []).map((p) => p?.name ?? undefined);
  return {
    key: `${o.metadata.namespace}/${serviceHostname(o, domain)}`,
    namespace: o.metadata.namespace,
    selector: o.spec.selector ?? {},
    ports: servicePorts(o).map((p, i) => ({ ...p, name: names[i] })),
    byPortName: false,
  };
}

/**
 * Every Kubernetes Service but ExternalName ones, by `namespace/name`, selector or not: what an EndpointSlice's
 * `kubernetes.io/service-name` label names.
 */
export function servicesByName(objects: readonly Resource[], domain: string): Map<string, ServiceBackend> {
  const out = new Map<string, ServiceBackend>();
  for (const o of objects) {
    if (o.kind !== 'Service') continue;
    const b = kubeServiceBackend(o, domain);
    if (b !== undefined) out.set(`${o.metadata.namespace}/${o.metadata.name}`, b);
  }
  return out;
}

/** Backends of every Service with a selector, and of every ServiceEntry host its ServiceEntry won (`selection`). */
export function serviceBackends(
  objects: readonly Resource[],
  domain: string,
  selection: ServiceSelection,
): ServiceBackend[] {
  const out: ServiceBackend[] = [];
  for (const o of objects) {
    if (o.kind === 'Service') {
      const b = kubeServiceBackend(o, domain);
      if (b !== undefined && Object.keys(b.selector).length > 0) out.push(b);
    } else if (o.kind === 'ServiceEntry') {
      const selector = o.spec.workloadSelector?.labels ?? {};
      if (Object.keys(selector).length === 0) continue;
      for (const host of serviceEntryHosts(o).filter((h) => selection.serves(o, h))) {
        out.push({
          key: `${o.metadata.namespace}/${host}`,
          namespace: o.metadata.namespace,
          selector,
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
    out[b.key] = portsOn(b, namedPorts);
  }
  return out;
}

/** The service ports a workload with `namedPorts` serves for backend `b`: those whose target it has. */
export function portsOn(b: ServiceBackend, namedPorts: Readonly<Record<string, number>>): PortModel[] {
  return b.ports.flatMap((p) => {
    const target = backendTargetPort(p, b.byPortName, namedPorts);
    return target === undefined ? [] : [{ servicePort: p.port, targetPort: target }];
  });
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

export function serviceEntryHosts(se: ServiceEntry): string[] {
  return se.spec.hosts?.filter((h): h is string => typeof h === 'string' && h !== '') ?? [];
}

export function serviceEntryPorts(se: ServiceEntry): (ServicePortSpec & { name: string | undefined })[] {
  return (se.spec.ports ?? []).flatMap((p) => {
    const port = inRange(p?.number);
    if (port === undefined) return [];
    const t = p?.targetPort;
    return [
      {
        port,
        targetPort: typeof t === 'number' && t > 0 ? t : undefined,
        name: p?.name ?? undefined,
        appProtocol: appProtocolOfName(p?.protocol ?? ''),
      },
    ];
  });
}

/** An address or CIDR of `spec.addresses`, or an allocated address, as a VIP; undefined when it is neither. */
function serviceEntryVip(a: string): NetworkAddressModel | undefined {
  const [ip = '', len, ...rest] = a.split('/');
  const b = ipBytes(ip);
  if (b === undefined || rest.length > 0) return undefined;
  if (len === undefined) return { network: '', address: new Uint8Array(b) };
  const length = /^\d{1,3}$/.test(len) ? Number(len) : Number.NaN;
  return length <= b.length * 8 ? { network: '', address: new Uint8Array(b), length } : undefined;
}

/**
 * A ServiceEntry → one Service per host it won (`selection`), canonical when it is the hostname's canonical one
 * (istio `pilot/pkg/serviceregistry/ambient/services.go` `constructServiceEntries`). Addresses may be CIDRs; a
 * ServiceEntry without any, whose resolution is not NONE, gives each host the addresses istiod allocated it
 * (`status.addresses`, with `ipAutoallocate` on; a wildcard host only under DYNAMIC_DNS). `resolution: NONE`
 * (also when unset) keeps the original destination (PASSTHROUGH), as there is nothing to load-balance over, and so
 * takes any endpoint (ALLOW_ALL). One entry of `spec.addresses` that is neither an address nor a CIDR drops the
 * whole ServiceEntry, as upstream drops it, rather than serving its hosts on fewer addresses than it names.
 */
export function convertServiceEntry(
  se: ServiceEntry,
  selection: ServiceSelection,
  ipAutoallocate: boolean,
): ServiceModel[] {
  const vips = (se.spec.addresses?.map(String) ?? []).map(serviceEntryVip);
  if (vips.includes(undefined)) return [];
  const addresses = vips.filter((v) => v !== undefined);
  const ports: PortModel[] = serviceEntryPorts(se).map((p) => ({
    servicePort: p.port,
    targetPort: typeof p.targetPort === 'number' ? p.targetPort : p.port,
    appProtocol: p.appProtocol,
  }));
  const passthrough = (se.spec.resolution ?? 'NONE') === 'NONE';
  const allocated = shouldAutoAllocateIp(se, ipAutoallocate) ? autoAllocatedAddresses(se) : new Map<string, string[]>();
  const hostAddresses = (host: string): NetworkAddressModel[] => {
    if (addresses.length > 0 || passthrough || !takesAutoAllocatedAddress(se, host)) return addresses;
    return (allocated.get(host) ?? []).flatMap((a) => serviceEntryVip(a) ?? []);
  };
  const sans = se.spec.subjectAltNames?.map(String) ?? [];
  return serviceEntryHosts(se)
    .filter((h) => selection.serves(se, h))
    .map((hostname) => ({
      name: se.metadata.name,
      namespace: se.metadata.namespace,
      hostname,
      addresses: hostAddresses(hostname),
      ports,
      subjectAltNames: sans,
      loadBalancing: passthrough
        ? { routingPreference: [], mode: LbMode.PASSTHROUGH, healthPolicy: LbHealthPolicy.ALLOW_ALL }
        : undefined,
      canonical: selection.isCanonical(se, hostname),
    }));
}
