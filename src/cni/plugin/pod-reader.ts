/**
 * Reads a pod and its namespace from the Kubernetes API for the capture decision, with the kubeconfig the node agent
 * writes for the plugin (istio cni/pkg/plugin/kubernetes.go newK8sClient; plugin.go isAmbientPod GETs both objects).
 * Each GET is bounded: a hung API must fail the ADD (kubelet retries) rather than hold the sandbox forever.
 *
 * Written with node:https instead of @kubernetes/client-node: the plugin is a process per pod operation, and loading
 * client-node would cost each ADD about half a second of CPU for two GETs. For the same reason the two GETs share one
 * connection (one TLS handshake), and the kubeconfig the node agent writes (src/cni/agent/plugin-kubeconfig.ts, as
 * Istio's installer does), which is JSON, is read without loading the YAML parser; one written as YAML still works.
 * It holds a server, its CA and a token, or a client certificate. Any other way to authenticate is refused by name.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { describeStatus, parseStatus } from '../../kube/api-status.js';
import { httpGet } from '../../kube/http-get.js';
import { MeshError } from '../../lib/errors.js';
import { asRecord, isRecord } from '../../lib/record.js';
import type { PodFacts } from './capture-decision.js';

/** Per request; Istio's client has none, but a plugin that never returns blocks the pod's sandbox for good. */
export const KUBE_API_TIMEOUT_MS = 5_000;

/** What the plugin needs of a kubeconfig to reach the API. */
interface ApiClient {
  /** The cluster's `server`, as the kubeconfig spells it. */
  readonly server: string;
  readonly tls: https.RequestOptions;
  readonly headers: Readonly<Record<string, string>>;
}

const USER_FIELDS_UNSUPPORTED = ['exec', 'auth-provider', 'username', 'password'] as const;

/** The entry `name` of a kubeconfig list (`clusters`, `users`, `contexts`), by its `name`. */
function named(config: Record<string, unknown>, list: string, name: unknown): Record<string, unknown> | undefined {
  const items = config[list];
  if (!Array.isArray(items)) return undefined;
  const item: unknown = items.find((i) => isRecord(i) && i['name'] === name);
  return isRecord(item) ? asRecord(item[list.slice(0, -1)]) : undefined;
}

/** A string field, or undefined. */
const str = (o: Record<string, unknown>, k: string): string | undefined =>
  typeof o[k] === 'string' && o[k] !== '' ? o[k] : undefined;

/** `<field>-data` (base64) or `<field>` (a file, relative to the kubeconfig's directory). */
function material(o: Record<string, unknown>, field: string, dir: string): Buffer | undefined {
  const data = str(o, `${field}-data`);
  if (data !== undefined) return Buffer.from(data, 'base64');
  const file = str(o, field);
  return file === undefined ? undefined : readFileSync(path.resolve(dir, file));
}

/** A kubeconfig's document: JSON as the node agent writes it, else YAML. */
async function parseKubeconfig(text: string): Promise<Record<string, unknown>> {
  try {
    return asRecord(JSON.parse(text));
  } catch {
    // yaml is CommonJS: the bundle hands it to a dynamic import as the default export only.
    const yaml = (await import('yaml')) as typeof import('yaml') & { default?: typeof import('yaml') };
    return asRecord((yaml.default ?? yaml).parse(text));
  }
}

/** The current context's server and credentials; throws with what is wrong. */
async function loadClient(kubeconfigPath: string): Promise<ApiClient> {
  const dir = path.dirname(kubeconfigPath);
  const config = await parseKubeconfig(readFileSync(kubeconfigPath, 'utf8'));
  const context = named(config, 'contexts', config['current-context']);
  const cluster = context === undefined ? undefined : named(config, 'clusters', context['cluster']);
  const server = cluster === undefined ? undefined : str(cluster, 'server');
  if (cluster === undefined || server === undefined) throw new Error('it has no current context with a cluster');
  const user = (context === undefined ? undefined : named(config, 'users', context['user'])) ?? {};
  const unsupported = USER_FIELDS_UNSUPPORTED.filter((k) => user[k] !== undefined);
  if (unsupported.length > 0)
    throw new Error(`its user authenticates with ${unsupported.join(', ')}; the plugin takes a token or a certificate`);
  const tokenFile = str(user, 'tokenFile');
  const token =
    str(user, 'token') ??
    (tokenFile === undefined ? undefined : readFileSync(path.resolve(dir, tokenFile), 'utf8').trim());
  const tlsServerName = str(cluster, 'tls-server-name');
  return {
    server,
    tls: {
      ca: material(cluster, 'certificate-authority', dir),
      cert: material(user, 'client-certificate', dir),
      key: material(user, 'client-key', dir),
      rejectUnauthorized: cluster['insecure-skip-tls-verify'] !== true,
      ...(tlsServerName === undefined ? {} : { servername: tlsServerName }),
    },
    headers: { accept: 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
  };
}

/** GETs `apiPath` and parses the object; rejects with the API's Status or the transport's error. */
async function getObject(
  client: ApiClient,
  agent: http.Agent,
  apiPath: string,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  const url = new URL(client.server.replace(/\/+$/, '') + apiPath);
  const { statusCode, body } = await httpGet(url, {
    agent,
    headers: client.headers,
    signal: AbortSignal.timeout(timeoutMs),
    ...(url.protocol === 'https:' ? client.tls : {}),
  });
  if (statusCode !== 200) throw new Error(describeStatus(parseStatus(statusCode, body)));
  return asRecord(JSON.parse(body));
}

/** Labels (or annotations) of an object's metadata, string values only. */
function stringMap(metadata: Record<string, unknown>, field: string): Record<string, string> {
  const m = asRecord(metadata[field]);
  return Object.fromEntries(Object.entries(m).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

export async function readPodFacts(
  kubeconfigPath: string,
  namespace: string,
  name: string,
  timeoutMs = KUBE_API_TIMEOUT_MS,
): Promise<PodFacts> {
  let client: ApiClient;
  try {
    client = await loadClient(kubeconfigPath);
  } catch (e) {
    throw new MeshError(
      'CNI_ERR_KUBE_API',
      `cannot load the plugin's kubeconfig ${kubeconfigPath} (the node agent writes it): ${(e as Error).message}`,
      { cause: e },
    );
  }
  // One socket: the second GET waits for the first and reuses its connection.
  const agentOptions = { keepAlive: true, maxSockets: 1 };
  const agent = client.server.startsWith('https:') ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const read = async (what: string, apiPath: string): Promise<Record<string, unknown>> => {
    try {
      return await getObject(client, agent, apiPath, timeoutMs);
    } catch (e) {
      throw new MeshError(
        'CNI_ERR_KUBE_API',
        `cannot read ${what} from the Kubernetes API at ${client.server}: ${(e as Error).message}`,
        { cause: e },
      );
    }
  };
  const [pod, ns] = await Promise.all([
    read(
      `pod ${namespace}/${name}`,
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
    ),
    read(`namespace ${namespace}`, `/api/v1/namespaces/${encodeURIComponent(namespace)}`),
  ]).finally(() => agent.destroy());
  const podMeta = asRecord(pod['metadata']);
  return {
    labels: stringMap(podMeta, 'labels'),
    annotations: stringMap(podMeta, 'annotations'),
    hostNetwork: asRecord(pod['spec'])['hostNetwork'] === true,
    namespaceLabels: stringMap(asRecord(ns['metadata']), 'labels'),
  };
}
