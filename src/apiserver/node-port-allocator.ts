import { randomInt } from 'node:crypto';
import { ApiError, invalid as invalidObject, type StatusCause } from './api-error.js';
import type { KubeObject } from './kube-object.js';
import { index, invalid } from './validation/field-errors.js';
import { asNumber, asObject, objectsOf } from './validation/json-fields.js';
import { serviceType } from './strategies/service.js';

/**
 * Service node ports, allocated as k8s.io/kubernetes `pkg/registry/core/service/portallocator` does for the
 * default `--service-node-port-range` 30000-32767: every port of a NodePort Service, and of a LoadBalancer Service
 * unless `allocateLoadBalancerNodePorts` is false, gets a node port; a port the client names is honoured when it
 * is in the range and free, and refused with upstream's 422 otherwise; the others get a random free port, from the
 * upper part of the range first (the lower band, 1/16 of the range, is kept for ports clients name, as the static
 * subrange is). As the cluster IP allocator, it keeps no state of its own beyond what the stored Services hold:
 * rebuilt at start, called before a Service is stored, and told what a delete or failed write gave back.
 */
export const NODE_PORT_RANGE = { first: 30000, last: 32767 } as const;
const LOWER_BAND = Math.min(128, Math.max(16, Math.floor((NODE_PORT_RANGE.last - NODE_PORT_RANGE.first + 1) / 16)));

const needsNodePorts = (spec: Record<string, unknown>): boolean => {
  const type = serviceType(spec);
  return type === 'NodePort' || (type === 'LoadBalancer' && spec.allocateLoadBalancerNodePorts !== false);
};
const portsOf = (svc: KubeObject): number[] =>
  objectsOf(asObject(svc.spec)?.ports).flatMap((p) => {
    const n = asNumber(p.nodePort) ?? 0;
    return n === 0 ? [] : [n];
  });

export class NodePortAllocator {
  private readonly used = new Set<number>();

  /** Forgets every allocation and takes those of `services` (all Services in the store). */
  rebuild(services: Iterable<KubeObject>): void {
    this.used.clear();
    for (const svc of services) for (const p of portsOf(svc)) this.used.add(p);
  }

  /** Gives a new Service its node ports; throws `ApiError` when a named one is refused. */
  allocate(svc: KubeObject): void {
    this.fill(svc, new Set());
  }

  /** An update keeps the ports it had, gets the ones it now needs, and gives back the ones it dropped. */
  update(svc: KubeObject, old: KubeObject): void {
    const before = new Set(portsOf(old));
    this.fill(svc, before);
    const now = new Set(portsOf(svc));
    for (const p of before) if (!now.has(p)) this.used.delete(p);
  }

  release(svc: KubeObject): void {
    for (const p of portsOf(svc)) this.used.delete(p);
  }

  /** Allocates the Service's missing and named ports; `held` are its own already. */
  private fill(svc: KubeObject, held: ReadonlySet<number>): void {
    const spec = asObject(svc.spec) ?? {};
    if (!needsNodePorts(spec)) return;
    const taken: number[] = [];
    try {
      objectsOf(spec.ports).forEach((p, i) => {
        const named = asNumber(p.nodePort) ?? 0;
        if (named === 0) {
          const port = this.next();
          p.nodePort = port;
          taken.push(port);
          return;
        }
        if (held.has(named)) return;
        const at = `${index('spec.ports', i)}.nodePort`;
        if (named < NODE_PORT_RANGE.first || named > NODE_PORT_RANGE.last)
          throw this.refuse(
            svc,
            invalid(
              at,
              named,
              `provided port is not in the valid range. The range of valid ports is ${String(NODE_PORT_RANGE.first)}-${String(NODE_PORT_RANGE.last)}`,
            ),
          );
        if (this.used.has(named)) throw this.refuse(svc, invalid(at, named, 'provided port is already allocated'));
        this.used.add(named);
        taken.push(named);
      });
    } catch (e) {
      for (const p of taken) this.used.delete(p);
      throw e;
    }
  }

  /** A random free port of the upper part of the range, else of its lower band (as `allocateNext` picks IPs). */
  private next(): number {
    const upper = NODE_PORT_RANGE.first + LOWER_BAND;
    for (const [lo, hi] of [
      [upper, NODE_PORT_RANGE.last + 1],
      [NODE_PORT_RANGE.first, upper],
    ] as const) {
      const n = hi - lo;
      const start = randomInt(n);
      for (let i = 0; i < n; i++) {
        const p = lo + ((start + i) % n);
        if (this.used.has(p)) continue;
        this.used.add(p);
        return p;
      }
    }
    throw new ApiError('InternalError', 'Internal error occurred: failed to allocate a nodePort: range is full');
  }

  private refuse(svc: KubeObject, cause: StatusCause): ApiError {
    return invalidObject('Service', '', svc.metadata.name ?? '', [cause]);
  }
}
