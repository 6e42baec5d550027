/**
 * Manifests for tests' config directories. istiod applies a directory to its embedded API server, which takes
 * only valid Kubernetes objects: a pod needs containers, and every namespaced object needs its Namespace.
 * Each helper returns YAML documents (JSON is YAML), each starting with `---`.
 */
const doc = (o: object): string => `---\n${JSON.stringify(o)}\n`;

export function namespaces(...names: readonly string[]): string {
  return names.map((name) => doc({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })).join('');
}

/** A Namespace enrolled in ambient mode (`istio.io/dataplane-mode: ambient`). */
export function ambientNamespace(name: string): string {
  return doc({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'istio.io/dataplane-mode': 'ambient' } },
  });
}

/** Any object as one more document (ServiceAccounts, Services, policies). */
export function object(o: object): string {
  return doc(o);
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
    metadata: {
      name: p.name,
      namespace: p.namespace,
      ...(p.labels === undefined ? {} : { labels: p.labels }),
      ...(p.ambient === false ? {} : { annotations: { 'ambient.istio.io/redirection': 'enabled' } }),
    },
    spec: {
      ...(p.serviceAccount === undefined ? {} : { serviceAccountName: p.serviceAccount }),
      nodeName: p.node,
      containers: [{ name: 'app', image: 'amesh-echo', ...(ports.length === 0 ? {} : { ports }) }],
    },
    status: { phase: 'Running', podIP: p.ip },
  });
}

/** A container that runs a command, as `amesh up`'s kubelet runs containers (no images). */
export interface CommandContainer {
  readonly name: string;
  readonly command: readonly string[];
  readonly ports?: Readonly<Record<string, number>>;
  readonly readinessProbe?: Readonly<Record<string, unknown>>;
  readonly env?: readonly Readonly<Record<string, unknown>>[];
}

const container = (c: CommandContainer): object => ({
  name: c.name,
  image: 'command',
  command: c.command,
  ...(c.ports === undefined
    ? {}
    : { ports: Object.entries(c.ports).map(([name, containerPort]) => ({ name, containerPort })) }),
  ...(c.readinessProbe === undefined ? {} : { readinessProbe: c.readinessProbe }),
  ...(c.env === undefined ? {} : { env: c.env }),
});

/** A Deployment of `replicas` pods labelled `app: <name>`, each running `c`. */
export function deployment(d: {
  name: string;
  namespace: string;
  replicas: number;
  container: CommandContainer;
}): string {
  return doc({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: d.name, namespace: d.namespace },
    spec: {
      replicas: d.replicas,
      selector: { matchLabels: { app: d.name } },
      template: {
        metadata: { labels: { app: d.name } },
        spec: { terminationGracePeriodSeconds: 2, containers: [container(d.container)] },
      },
    },
  });
}

/** A pod running `c`, left for the scheduler to place unless `nodeName` pins it. */
export function commandPod(p: {
  name: string;
  namespace: string;
  container: CommandContainer;
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  nodeName?: string;
  serviceAccountName?: string;
  labels?: Readonly<Record<string, string>>;
}): string {
  return doc({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: p.namespace, ...(p.labels === undefined ? {} : { labels: p.labels }) },
    spec: {
      terminationGracePeriodSeconds: 2,
      ...(p.restartPolicy === undefined ? {} : { restartPolicy: p.restartPolicy }),
      ...(p.nodeName === undefined ? {} : { nodeName: p.nodeName }),
      ...(p.serviceAccountName === undefined ? {} : { serviceAccountName: p.serviceAccountName }),
      containers: [container(p.container)],
    },
  });
}

/** A Node one-liner: a TCP echo server on `port` that prints `listening` once it listens; `marker` names it in `ps`. */
export function nodeEchoCommand(port: number, marker: string): string[] {
  return [
    'node',
    '-e',
    `/* ${marker} */ require('net').createServer((s) => s.pipe(s)).listen(${String(port)}, () => console.log('listening'))`,
  ];
}
