/**
 * Discovery documents, as k8s.io/apiserver pkg/endpoints/discovery serves them: `/api` (APIVersions), `/apis`
 * (APIGroupList), and one APIResourceList per group version, all derived from the kinds table. kubectl and
 * client libraries resolve kinds, plurals, short names and verbs from these.
 */
import { servedKinds } from '../kinds.js';
import type { KindInfo, Subresource } from '../kind-info.js';

/** What discovery says of each subresource: the kind its requests carry and its verbs. */
const SUBRESOURCE_DISCOVERY: Readonly<Record<Subresource, (k: KindInfo) => object>> = {
  status: (k) => ({ kind: k.kind, verbs: ['get', 'patch', 'update'] }),
  token: () => ({ group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] }),
  binding: () => ({ kind: 'Binding', verbs: ['create'] }),
  scale: () => ({ group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] }),
};

const READ_WRITE_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function groupVersion(k: KindInfo): string {
  return k.group === '' ? k.version : `${k.group}/${k.version}`;
}

export function apiVersions(serverAddress: string): unknown {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

/** Every named group with its versions, in the order the kinds table lists them. */
export function apiGroupList(): unknown {
  const groups = new Map<string, Set<string>>();
  for (const k of servedKinds()) {
    if (k.group === '') continue;
    const vs = groups.get(k.group) ?? new Set<string>();
    vs.add(k.version);
    groups.set(k.group, vs);
  }
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups].map(([name, versions]) => apiGroup(name, [...versions])),
  };
}

/**
 * Where a version sorts in k8s.io/apimachinery's `CompareKubeAwareVersionStrings`: GA before beta before alpha,
 * higher major and then higher minor first, versions of another form last (by name).
 */
function versionPriority(v: string): [number, number, number] {
  const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
  if (m === null) return [3, 0, 0];
  const stage = { alpha: 2, beta: 1 }[m[2] ?? ''] ?? 0;
  return [stage, -Number(m[1]), -Number(m[3] ?? 0)];
}

function byVersionPriority(a: string, b: string): number {
  const [pa, pb] = [versionPriority(a), versionPriority(b)];
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return a.localeCompare(b);
}

/**
 * One group: its preferred version is the one its first kind is stored at (the stored version comes first in the
 * kinds table); the other versions follow in Kubernetes' version order, as kube-apiserver lists a CRD group's.
 */
function apiGroup(name: string, versions: string[]): unknown {
  const [preferred, ...others] = versions;
  const vs = [preferred, ...others.sort(byVersionPriority)].map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: vs, preferredVersion: vs[0] };
}

/** `/apis/<group>`: one group, or undefined when not served. */
export function apiGroupDocument(group: string): unknown {
  const versions = [
    ...new Set(
      servedKinds()
        .filter((k) => k.group === group)
        .map((k) => k.version),
    ),
  ];
  if (versions.length === 0) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...(apiGroup(group, versions) as object) };
}

/** `/api/v1`, `/apis/<group>/<version>`: the resources of one group version, or undefined when not served. */
export function apiResourceList(group: string, version: string): unknown {
  const kinds = servedKinds().filter((k) => k.group === group && k.version === version);
  if (kinds.length === 0) return undefined;
  const resources: unknown[] = [];
  for (const k of kinds) {
    resources.push({
      name: k.plural,
      singularName: k.singular,
      namespaced: k.namespaced,
      kind: k.kind,
      verbs: k.review ? ['create'] : READ_WRITE_VERBS,
      ...(k.shortNames.length > 0 ? { shortNames: k.shortNames } : {}),
      ...(k.categories.length > 0 ? { categories: k.categories } : {}),
    });
    for (const sub of k.subresources)
      resources.push({
        name: `${k.plural}/${sub}`,
        singularName: '',
        namespaced: k.namespaced,
        ...SUBRESOURCE_DISCOVERY[sub](k),
      });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: groupVersion(kinds[0] as KindInfo), resources };
}
