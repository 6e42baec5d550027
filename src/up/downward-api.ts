/**
 * The downward API's values, for env (`fieldRef`, `resourceFieldRef`) and for downwardAPI volume files, as kubelet
 * computes them (kubernetes pkg/kubelet/kubelet_pods.go podFieldSelectorRuntimeValue, pkg/fieldpath/fieldpath.go
 * ExtractFieldPathAsString and FormatMap, pkg/api/v1/resource/helpers.go ExtractContainerResourceValue). A
 * container's resource without a limit reads as the node's allocatable, as kubelet defaults it.
 */
import os from 'node:os';
import type { V1Container, V1ObjectFieldSelector, V1Pod, V1ResourceFieldSelector } from '@kubernetes/client-node';
import { parseQuantity } from '../lib/quantity.js';

/** What a pod's status fields read as: the addresses its sandbox and node have. */
export interface PodAddresses {
  readonly podIp: string;
  readonly hostIp: string;
}

const LABEL_KEY = /^metadata\.(labels|annotations)\['(.+)'\]$/;

/** `key="value"` lines, sorted by key (FormatMap), the value quoted as Go's %q quotes it. */
function formatMap(m: Readonly<Record<string, string>> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m![k])}`)
    .join('\n');
}

/** The value of `fieldRef` for `pod`; undefined for a field the downward API does not offer. */
export function podFieldValue(pod: V1Pod, ref: V1ObjectFieldSelector, at: PodAddresses): string | undefined {
  const meta = pod.metadata ?? {};
  const keyed = LABEL_KEY.exec(ref.fieldPath);
  if (keyed !== null) return (keyed[1] === 'labels' ? meta.labels : meta.annotations)?.[keyed[2]!] ?? '';
  switch (ref.fieldPath) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'metadata.labels':
      return formatMap(meta.labels);
    case 'metadata.annotations':
      return formatMap(meta.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? 'default';
    case 'status.podIP':
    case 'status.podIPs':
      return at.podIp;
    case 'status.hostIP':
    case 'status.hostIPs':
      return at.hostIp;
    default:
      return undefined;
  }
}

/** The node's allocatable, what an unlimited container reads. */
const NODE_ALLOCATABLE: Readonly<Record<string, number>> = {
  cpu: os.availableParallelism(),
  memory: os.totalmem(),
  'ephemeral-storage': 0,
};

/**
 * The value of `resourceFieldRef` for container `c` (the named container's, when it names one): the limit or
 * request divided by the divisor, rounded up; undefined when the container or resource is not there.
 */
export function resourceFieldValue(
  pod: V1Pod,
  c: V1Container | undefined,
  ref: V1ResourceFieldSelector,
): string | undefined {
  const container =
    ref.containerName === undefined || ref.containerName === ''
      ? c
      : [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find(
          (x) => x.name === ref.containerName,
        );
  if (container === undefined) return undefined;
  const [kind, resource] = ref.resource.split('.', 2) as [string, string | undefined];
  if (resource === undefined || (kind !== 'limits' && kind !== 'requests')) return undefined;
  const set = kind === 'limits' ? container.resources?.limits : container.resources?.requests;
  const given = set?.[resource];
  let value: number | undefined;
  const limit = container.resources?.limits?.[resource];
  if (given !== undefined) value = parseQuantity(given);
  else if (kind === 'limits') value = NODE_ALLOCATABLE[resource];
  // A request that is not set is the limit, as the API defaults it, else none.
  else value = limit === undefined ? 0 : parseQuantity(limit);
  if (value === undefined) return undefined;
  const divisor = parseQuantity(ref.divisor ?? '1') ?? 1;
  return String(Math.ceil(value / (divisor === 0 ? 1 : divisor)));
}
