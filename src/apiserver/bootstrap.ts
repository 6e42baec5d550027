/**
 * What every Kubernetes cluster has from its first start, which clients take for granted (kubectl's default
 * namespace is `default`): the namespaces default, kube-system, kube-public and kube-node-lease, and the
 * `kubernetes` Service in `default` with the first address of the service range and an EndpointSlice naming the
 * API server itself, as kube-apiserver's bootstrap controllers keep them (pkg/controlplane/controller/
 * systemnamespaces and kubernetesservice). Existing objects are left alone except the EndpointSlice, which
 * follows the address the server now listens on.
 */
import type { Logger } from '../lib/log.js';
import { ApiError } from './api-error.js';
import { findKind } from './kinds.js';
import type { KindInfo } from './kind-info.js';
import type { KubeObject } from './kube-object.js';
import type { ResourceStore } from './resource-store.js';

const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'] as const;
/** The `kubernetes` Service's port: clients in pods reach the API on 443 (kubernetesservice's default). */
const KUBERNETES_SERVICE_PORT = 443;
const kind = (group: string, plural: string): KindInfo => findKind(group, 'v1', plural) as KindInfo;

async function createIfAbsent(
  store: ResourceStore,
  k: KindInfo,
  namespace: string | undefined,
  obj: KubeObject,
): Promise<void> {
  if (store.find(k, namespace, obj.metadata.name ?? '') !== undefined) return;
  try {
    await store.create(k, namespace, obj);
  } catch (e) {
    if (!(e instanceof ApiError && e.reason === 'AlreadyExists')) throw e;
  }
}

export async function bootstrapCluster(
  store: ResourceStore,
  o: { serviceIp: string; host: string; port: number },
  log: Logger,
): Promise<void> {
  for (const name of SYSTEM_NAMESPACES)
    await createIfAbsent(store, kind('', 'namespaces'), undefined, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name },
    });
  await createIfAbsent(store, kind('', 'services'), 'default', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'kubernetes', labels: { component: 'apiserver', provider: 'kubernetes' } },
    spec: {
      type: 'ClusterIP',
      clusterIP: o.serviceIp,
      ports: [{ name: 'https', port: KUBERNETES_SERVICE_PORT, protocol: 'TCP', targetPort: o.port }],
    },
  });
  const slices = kind('discovery.k8s.io', 'endpointslices');
  const slice: KubeObject = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'kubernetes',
      labels: {
        'kubernetes.io/service-name': 'kubernetes',
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    },
    addressType: o.host.includes(':') ? 'IPv6' : 'IPv4',
    endpoints: [{ addresses: [o.host], conditions: { ready: true } }],
    ports: [{ name: 'https', port: o.port, protocol: 'TCP' }],
  };
  const current = store.find(slices, 'default', 'kubernetes');
  if (current === undefined) await createIfAbsent(store, slices, 'default', slice);
  else if (JSON.stringify([current.endpoints, current.ports]) !== JSON.stringify([slice.endpoints, slice.ports])) {
    await store.mutate(slices, 'default', 'kubernetes', (s) => {
      s.endpoints = slice.endpoints;
      s.ports = slice.ports;
    });
  }
  log.debug(
    { namespaces: SYSTEM_NAMESPACES, service: `${o.serviceIp}:${KUBERNETES_SERVICE_PORT}` },
    'cluster bootstrap objects in place',
  );
}
