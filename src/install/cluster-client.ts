/**
 * The installer's view of a cluster: read, create, replace, list and delete objects of the install's kinds as plain
 * JSON. A cluster that cannot be reached is INSTALL_ERR_UNREACHABLE; an API that refuses a request is
 * INSTALL_ERR_APPLY with the API's own words, and a kind the API does not serve says so.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { describeStatus, parseStatus, type KubeStatus } from '../kube/api-status.js';
import { kubeRequest, type KubeAnswer } from '../kube/kube-request.js';
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import type { RenderedObject } from './chart-helpers.js';
import { installKind, kindPath, type InstallKind } from './install-kinds.js';

/** An object as the API returns it. */
export type LiveObject = RenderedObject & {
  readonly metadata: RenderedObject['metadata'] & { readonly resourceVersion?: string; readonly uid?: string };
};

/** How an object is named in messages: `Kind/namespace/name` as istioctl names it, or `Kind/name`. */
export function objectId(o: { kind: string; metadata: { name: string; namespace?: string } }): string {
  return o.metadata.namespace === undefined || o.metadata.namespace === ''
    ? `${o.kind}/${o.metadata.name}`
    : `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;
}

/** An API answer that is not a success. */
export class ApiRefusal extends Error {
  constructor(readonly status: KubeStatus) {
    super(describeStatus(status));
  }
}

export class ClusterClient {
  constructor(private readonly kc: KubeConfig) {}

  /** The API server's address, for messages. */
  get server(): string {
    return this.kc.getCurrentCluster()?.server ?? '(no server)';
  }

  private async request(method: string, path: string, body?: unknown): Promise<KubeAnswer> {
    try {
      return await kubeRequest(this.kc, method, path, body);
    } catch (e) {
      throw new MeshError(
        'INSTALL_ERR_UNREACHABLE',
        `the cluster at ${this.server} cannot be reached: ${(e as Error).message}`,
        { cause: e },
      );
    }
  }

  /** Sends a request; a non-2xx answer is an ApiRefusal. */
  private async ok(method: string, path: string, body?: unknown): Promise<unknown> {
    const a = await this.request(method, path, body);
    if (a.statusCode >= 200 && a.statusCode < 300) return a.body;
    throw new ApiRefusal(parseStatus(a.statusCode, a.body));
  }

  /** The object, or undefined when it does not exist (or its kind is not served). */
  async get(kind: InstallKind, namespace: string | undefined, name: string): Promise<LiveObject | undefined> {
    const a = await this.request('GET', kindPath(kind, namespace, name));
    if (a.statusCode === 404) return undefined;
    if (a.statusCode >= 200 && a.statusCode < 300) return a.body as LiveObject;
    throw this.refused('read', `${kind.kind}/${name}`, parseStatus(a.statusCode, a.body));
  }

  async create(o: RenderedObject): Promise<LiveObject> {
    const kind = installKind(o.apiVersion, o.kind);
    try {
      return (await this.ok('POST', kindPath(kind, o.metadata.namespace), o)) as LiveObject;
    } catch (e) {
      if (
        e instanceof ApiRefusal &&
        e.status.code === 404 &&
        e.status.message.includes('could not find the requested resource')
      )
        throw new MeshError(
          'INSTALL_ERR_APPLY',
          `cannot create ${objectId(o)}: the API server at ${this.server} does not serve ${o.apiVersion} ${kind.plural}`,
        );
      throw e;
    }
  }

  async replace(o: RenderedObject): Promise<LiveObject> {
    const kind = installKind(o.apiVersion, o.kind);
    return (await this.ok('PUT', kindPath(kind, o.metadata.namespace, o.metadata.name), o)) as LiveObject;
  }

  /** Deletes an object (foreground, as istioctl); false when it was already gone. */
  async delete(kind: InstallKind, namespace: string | undefined, name: string): Promise<boolean> {
    const a = await this.request('DELETE', kindPath(kind, namespace, name), {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Foreground',
    });
    if (a.statusCode === 404) return false;
    if (a.statusCode >= 200 && a.statusCode < 300) return true;
    throw this.refused('delete', `${kind.kind}/${name}`, parseStatus(a.statusCode, a.body));
  }

  /** The objects of a kind matching `labelSelector`, in `namespace` or in all; none when the kind is not served. */
  async list(kind: InstallKind, labelSelector: string, namespace?: string): Promise<LiveObject[]> {
    const a = await this.request(
      'GET',
      `${kindPath(kind, namespace)}?labelSelector=${encodeURIComponent(labelSelector)}`,
    );
    if (a.statusCode === 404) return [];
    if (a.statusCode < 200 || a.statusCode >= 300)
      throw this.refused('list', kind.plural, parseStatus(a.statusCode, a.body));
    const items = isRecord(a.body) && Array.isArray(a.body['items']) ? (a.body['items'] as LiveObject[]) : [];
    // A list's items carry no kind; name them for the caller.
    return items.map((i) => ({ ...i, apiVersion: kind.apiVersion, kind: kind.kind }));
  }

  /** Whether `group/version` serves `plural` (API discovery). */
  async serves(groupVersion: string, plural: string): Promise<boolean> {
    const a = await this.request('GET', groupVersion.includes('/') ? `/apis/${groupVersion}` : `/api/${groupVersion}`);
    if (a.statusCode !== 200 || !isRecord(a.body) || !Array.isArray(a.body['resources'])) return false;
    return a.body['resources'].some((r) => isRecord(r) && r['name'] === plural);
  }

  refused(verb: string, what: string, status: KubeStatus): MeshError {
    return new MeshError('INSTALL_ERR_APPLY', `cannot ${verb} ${what}: ${describeStatus(status)}`);
  }
}
