/**
 * Manifests for tests' config directories. istiod applies a directory to its embedded API server, which takes
 * only valid Kubernetes objects: a pod needs containers, and every namespaced object needs its Namespace.
 * Each helper returns YAML documents (JSON is YAML), each starting with `---`.
 */
const doc = (o: object): string => `---\n${JSON.stringify(o)}\n`;

export function namespaces(...names: readonly string[]): string {
  return names.map((name) => doc({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })).join('');
}

export interface TestPod {
  readonly name: string;
  readonly namespace: string;
  readonly ip: string;
  readonly node: string;
  readonly serviceAccount?: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** Enrolled (`ambient.istio.io/redirection: enabled`, as the node agent marks a captured pod) unless false. */
  readonly ambient?: boolean;
  /** Named container ports, for Services whose targetPort names one. */
  readonly ports?: Readonly<Record<string, number>>;
}

/** A running pod with one container, reported at `ip` on `node`. */
export function pod(p: TestPod): string {
  const ports = Object.entries(p.ports ?? {}).map(([name, containerPort]) => ({ name, containerPort }));
  return doc({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: p.namespace, ...(p.labels === undefined ? {} : { labels: p.labels }), ...(p.ambient === false ? {} : { annotations: { 'ambient.istio.io/redirection': 'enabled' } }) },
    spec: { ...(p.serviceAccount === undefined ? {} : { serviceAccountName: p.serviceAccount }), nodeName: p.node, containers: [{ name: 'app', image: 'amesh-echo', ...(ports.length === 0 ? {} : { ports }) }] },
    status: { phase: 'Running', podIP: p.ip },
  });
}
