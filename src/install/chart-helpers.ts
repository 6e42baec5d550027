/**
 * What the charts' templates share: Helm's truth test and value printing, the labels every object carries
 * (`istio.labels` in manifests/zzz_profile.yaml, as istioctl renders them: release `istio`, managed by `Helm`), the
 * resources block that drops empty entries (`istiod.resources` and its copies in the charts' _helpers.tpl), the image
 * reference, and Istio's log-level flag turned into amesh's.
 */
import { stringify } from 'yaml';
import { VERSION } from '../lib/version.js';
import { isRecord } from '../lib/record.js';
import type { ChartName } from './chart-defaults.js';
import { at } from './value-tree.js';

/** Kubernetes objects as the charts render them. */
export interface RenderedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly [field: string]: unknown;
}

/** The release name istioctl renders every chart as (operator/pkg/render/manifest.go helm.Render("istio", ...)). */
export const RELEASE = 'istio';

/** Go templates' truth: false, 0, "", nil and empty maps and lists are false. */
export function truthy(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isRecord(v)) return Object.keys(v).length > 0;
  return true;
}

/** A value as `{{ $val }}` prints it (Helm's values are JSON: numbers print as Go prints a float64). */
export function goString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 1e21 ? v.toFixed(0) : String(v);
  if (v === undefined || v === null) return '<nil>';
  return typeof v === 'boolean' ? String(v) : JSON.stringify(v);
}

/** The chart names of Istio's Chart.yaml files, for `helm.sh/chart`. */
const CHART_NAMES: Readonly<Record<ChartName, string>> = {
  base: 'base',
  istiod: 'istiod',
  cni: 'cni',
  ztunnel: 'ztunnel',
  ingress: 'istio-ingress',
};

/** `istio.labels`: the chart's version is amesh's, as release builds stamp Istio's release into Chart.yaml. */
export function istioLabels(chart: ChartName): Record<string, string> {
  return {
    'app.kubernetes.io/managed-by': 'Helm',
    'app.kubernetes.io/instance': RELEASE,
    'app.kubernetes.io/part-of': 'istio',
    'app.kubernetes.io/version': VERSION,
    'helm.sh/chart': `${CHART_NAMES[chart]}-${VERSION}`.replaceAll('+', '_').slice(0, 63).replace(/-+$/, ''),
  };
}

/** `<chart>.resources`: limits then requests, each without its empty entries, and left out when nothing is left. */
export function resourcesBlock(resources: unknown): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  if (!isRecord(resources)) return out;
  for (const key of ['limits', 'requests']) {
    const entries = resources[key];
    if (!isRecord(entries)) continue;
    const kept = Object.fromEntries(Object.entries(entries).filter(([, v]) => truthy(v)));
    if (Object.keys(kept).length > 0) out[key] = kept;
  }
  return out;
}

/**
 * The container image: `image` whole when it is a reference of its own (it has a `/` or a `:`), else
 * `<hub>/<image>:<tag>`. amesh's image has no variants, so `variant` (`distroless` in the ambient profile) adds no
 * suffix.
 */
export function imageReference(image: string, hub: string, tag: string): string {
  if (image.includes('/') || image.includes(':')) return image;
  return `${hub}/${image}:${tag}`;
}

/** A chart's container image: its `image`, with its own `hub` and `tag` or else the global ones. */
export function componentImage(values: unknown): string {
  return imageReference(
    textAt(values, 'image'),
    textAt(values, 'hub', textAt(values, 'global.hub')),
    textAt(values, 'tag', textAt(values, 'global.tag')),
  );
}

/** The downward-API env both DaemonSets' containers and istiod read. */
export const fieldEnv = (name: string, fieldPath: string, apiVersion?: string): Record<string, unknown> => ({
  name,
  valueFrom: { fieldRef: apiVersion === undefined ? { fieldPath } : { apiVersion, fieldPath } },
});

/** `name: value` env entries for a values map, in key order as Go templates range over maps. */
export function envFromMap(env: unknown): { name: string; value: string }[] {
  if (!isRecord(env)) return [];
  return Object.keys(env)
    .sort()
    .map((name) => ({ name, value: goString(env[name]) }));
}

/** A values map whose entries the templates print as `{{ $key }}: "{{ $val }}"`: string values, keys in order. */
export function stringValues(map: unknown): Record<string, string> {
  return Object.fromEntries(envFromMap(map).map((e) => [e.name, e.value]));
}

/**
 * The NetworkPolicy each chart renders with `global.networkPolicy.enabled`: ingress to the listed ports (a list of
 * `[port, protocol]` groups, one ingress rule each), all egress.
 */
export function networkPolicy(
  metadata: RenderedObject['metadata'],
  podSelector: Record<string, string>,
  ingress: readonly (readonly (readonly [number, 'TCP' | 'UDP'])[])[],
): RenderedObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata,
    spec: {
      podSelector: { matchLabels: podSelector },
      policyTypes: ['Ingress', 'Egress'],
      ingress: ingress.map((ports) => ({ ports: ports.map(([port, protocol]) => ({ protocol, port })) })),
      egress: [{}],
    },
  };
}

/** A value as Helm's `toYaml` writes it (sigs.k8s.io/yaml: keys sorted), without the final newline. */
export function toYaml(v: unknown): string {
  return stringify(v, { sortMapEntries: true, lineWidth: 0, indentSeq: false }).trimEnd();
}

/** The value at `dotted` as the templates print it, or `dflt` where Go's `default` would take it (missing, empty). */
export function textAt(values: unknown, dotted: string, dflt = ''): string {
  const v = at(values, dotted);
  return truthy(v) ? goString(v) : dflt;
}
