import type { LocalWorkload } from '../../src/ztunnel/state/local-config.js';
import type { Service } from '../../src/ztunnel/state/service.js';
import type { Workload } from '../../src/ztunnel/state/workload.js';

/** A Kubernetes Service `name.ns.svc.cluster.local` with VIPs `network/ip`. */
export function kubeService(
  name: string,
  namespace: string,
  vips: readonly string[],
  o: Partial<Service> = {},
): Service {
  return {
    name,
    namespace,
    hostname: `${name}.${namespace}.svc.cluster.local`,
    vips,
    ports: { '80': 80 },
    endpoints: {},
    subjectAltNames: [],
    canonical: false,
    visibility: 'Public',
    ...o,
  };
}

/** A ServiceEntry host in `namespace` with addresses `network/ip`. */
export function hostService(
  hostname: string,
  namespace: string,
  vips: readonly string[],
  o: Partial<Service> = {},
): Service {
  return kubeService(hostname, namespace, vips, { hostname, ...o });
}

/** A pod workload backing `services` (`namespace/hostname`) on port 80. */
export function podWorkload(
  name: string,
  namespace: string,
  network: string,
  ips: readonly string[],
  services: readonly string[] = [],
): LocalWorkload {
  const workload: Workload = {
    uid: `Kubernetes//Pod/${namespace}/${name}`,
    workloadIps: ips,
    protocol: 'HBONE',
    networkMode: 'Standard',
    name,
    namespace,
    trustDomain: 'cluster.local',
    serviceAccount: 'default',
    network,
    workloadName: name,
    workloadType: 'pod',
    canonicalName: name,
    canonicalRevision: 'v1',
    hostname: '',
    node: 'n1',
    nativeTunnel: false,
    authorizationPolicies: [],
    status: 'Healthy',
    clusterId: 'Kubernetes',
    services: [...services],
    capacity: 1,
  };
  return { workload, services: Object.fromEntries(services.map((s) => [s, { '80': 80 }])) };
}
