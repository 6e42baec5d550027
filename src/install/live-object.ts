/**
 * How a rendered object meets the one in the cluster, so that a second install changes nothing and an upgrade
 * changes only what it renders differently. istioctl sends every object with server-side apply, where the API keeps
 * fields others own; amesh compares instead and replaces only objects whose rendering differs, carrying over what
 * others own:
 * - what the API and controllers fill in (defaults, status, resourceVersion) is not compared: the rendered object
 *   is unchanged when each field it sets has the same value in the cluster (an empty map, list, `false`, 0 or "" is
 *   the same as absent; quantities compare by value, `2048Mi` = `2Gi`);
 * - a replacement keeps the live object's labels and annotations it does not set, a Deployment's replicas when it
 *   sets none (an HPA scales it), a Service's allocated IPs and node ports, a ServiceAccount's secrets, and in
 *   ValidatingWebhookConfigurations the `caBundle` and the `Fail` policy istiod's webhook controller writes (the
 *   chart's `Ignore` is what Helm leaves out on upgrade).
 */
import { isRecord } from '../lib/record.js';
import { parseQuantity } from '../lib/quantity.js';
import type { RenderedObject } from './chart-helpers.js';
import type { LiveObject } from './cluster-client.js';
import { cloneValue, type Tree } from './value-tree.js';

/** Keys whose values are resource quantities. */
const QUANTITY_PARENTS = new Set(['limits', 'requests', 'hard']);

function sameScalar(want: unknown, live: unknown, quantity: boolean): boolean {
  if (want === live) return true;
  if (live === undefined || live === null) return want === false || want === 0 || want === '';
  if (quantity && (typeof live === 'string' || typeof live === 'number')) {
    const a = parseQuantity(String(want));
    const b = parseQuantity(String(live));
    return a !== undefined && a === b;
  }
  return false;
}

/** Whether every field `want` sets has that value in `live` (`quantities`: want's scalars are quantities). */
export function covers(want: unknown, live: unknown, quantities = false): boolean {
  if (want === undefined || want === null) return true;
  if (Array.isArray(want)) {
    if (want.length === 0) return live === undefined || live === null || (Array.isArray(live) && live.length === 0);
    return Array.isArray(live) && live.length === want.length && want.every((w, i) => covers(w, live[i]));
  }
  if (isRecord(want)) {
    if (Object.keys(want).length === 0) return live === undefined || live === null || isRecord(live);
    return (
      isRecord(live) &&
      Object.entries(want).every(([k, v]) =>
        covers(v, live[k], isRecord(v) || Array.isArray(v) ? QUANTITY_PARENTS.has(k) : quantities),
      )
    );
  }
  return sameScalar(want, live, quantities);
}

type Webhook = Tree & { name?: string; clientConfig?: Tree; failurePolicy?: string };

function keepWebhookState(desired: Tree, live: LiveObject): void {
  const liveHooks = Array.isArray(live['webhooks']) ? (live['webhooks'] as Webhook[]) : [];
  const hooks = Array.isArray(desired['webhooks']) ? (desired['webhooks'] as Webhook[]) : [];
  for (const hook of hooks) {
    const was = liveHooks.find((h) => h.name === hook.name);
    if (was === undefined) continue;
    const bundle = was.clientConfig?.['caBundle'];
    if (bundle !== undefined && hook.clientConfig !== undefined && hook.clientConfig['caBundle'] === undefined)
      hook.clientConfig['caBundle'] = bundle;
    if (hook.failurePolicy === 'Ignore' && was.failurePolicy === 'Fail') hook.failurePolicy = 'Fail';
  }
}

function keepServiceAllocations(spec: Tree, live: Tree): void {
  for (const field of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy', 'healthCheckNodePort'])
    if (spec[field] === undefined && live[field] !== undefined) spec[field] = live[field];
  const livePorts = Array.isArray(live['ports']) ? (live['ports'] as Tree[]) : [];
  for (const port of Array.isArray(spec['ports']) ? (spec['ports'] as Tree[]) : []) {
    const was = livePorts.find((p) => p['port'] === port['port'] && p['protocol'] === (port['protocol'] ?? 'TCP'));
    if (port['nodePort'] === undefined && was?.['nodePort'] !== undefined) port['nodePort'] = was['nodePort'];
  }
}

/** What the object should be, given the live one: the rendering, with what others own carried over. */
export function desiredObject(rendered: RenderedObject, live: LiveObject | undefined): RenderedObject {
  if (live === undefined) return rendered;
  const desired = cloneValue(rendered) as Tree & RenderedObject;
  const metadata = desired.metadata as Tree;
  for (const field of ['labels', 'annotations'] as const) {
    const theirs = live.metadata[field] ?? {};
    const ours = (metadata[field] ?? {}) as Record<string, string>;
    const merged = { ...theirs, ...ours };
    if (Object.keys(merged).length > 0) metadata[field] = merged;
  }
  const spec = desired['spec'];
  const liveSpec = live['spec'];
  if (rendered.kind === 'ValidatingWebhookConfiguration') keepWebhookState(desired, live);
  if (isRecord(spec) && isRecord(liveSpec)) {
    if (rendered.kind === 'Deployment' && spec['replicas'] === undefined && liveSpec['replicas'] !== undefined)
      spec['replicas'] = liveSpec['replicas'];
    if (rendered.kind === 'Service') keepServiceAllocations(spec, liveSpec);
  }
  if (rendered.kind === 'ServiceAccount' && desired['secrets'] === undefined && live['secrets'] !== undefined)
    (desired as Tree)['secrets'] = live['secrets'];
  return desired;
}

/** The replacement to send: the desired object at the live object's resourceVersion. */
export function replacementFor(desired: RenderedObject, live: LiveObject): RenderedObject {
  return {
    ...desired,
    metadata: { ...desired.metadata, resourceVersion: live.metadata.resourceVersion },
  } as RenderedObject;
}
