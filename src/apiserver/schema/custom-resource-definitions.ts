/**
 * Istio's CustomResourceDefinitions as the base chart installs them (istio manifests/charts/base/files/
 * crd-all.gen.yaml, rendered by templates/crds.yaml): one per kind of istio/api (AuthorizationPolicy,
 * DestinationRule, EnvoyFilter, Gateway, PeerAuthentication, ProxyConfig, RequestAuthentication, ServiceEntry,
 * Sidecar, Telemetry, TrafficExtension, VirtualService, WasmPlugin, WorkloadEntry, WorkloadGroup), each with its
 * names, versions (served, storage), printer columns, status subresource and the structural schema generated from
 * the protos (`istio-crds.gen.ts`), every kind's schema complete, EnvoyFilter's and Sidecar's included. CEL rules
 * are written with the generator's macros expanded, so their text differs from upstream's while meaning the same.
 */
import { ISTIO_CRDS } from './istio-crds.gen.js';
import type { CustomResourceSource } from './json-schema.js';

/**
 * The CRDs, in crd-all.gen.yaml's order, as fresh plain objects the caller may change. `labels` replaces the static
 * labels crd-all.gen.yaml carries (`app: istio-pilot`, `chart: istio`, `heritage: Tiller`, `release: istio`, and
 * `istio: security` or `istio: telemetry` on those groups' CRDs), as the chart's templates replace them with its
 * `istio.labels` (`app.kubernetes.io/managed-by`, `app.kubernetes.io/instance`, `app.kubernetes.io/part-of: istio`,
 * `app.kubernetes.io/version`, `helm.sh/chart`); without it the static labels stay.
 */
export function istioCustomResourceDefinitions(labels?: Readonly<Record<string, string>>): object[] {
  return ISTIO_CRDS.map((c) => customResourceDefinition(c, labels ?? c.labels));
}

/** One CRD object (apiextensions.k8s.io/v1) for a kind, with these labels. */
export function customResourceDefinition(
  c: CustomResourceSource,
  labels: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const hasStatus = c.schema.properties?.status !== undefined;
  return structuredClone({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { annotations: c.annotations, labels, name: `${c.plural}.${c.group}` },
    spec: {
      group: c.group,
      names: {
        ...(c.categories.length > 0 ? { categories: c.categories } : {}),
        kind: c.kind,
        listKind: c.listKind,
        plural: c.plural,
        ...(c.shortNames.length > 0 ? { shortNames: c.shortNames } : {}),
        singular: c.singular,
      },
      scope: 'Namespaced',
      versions: c.versions.map((v) => ({
        ...(c.printerColumns.length > 0 ? { additionalPrinterColumns: c.printerColumns } : {}),
        ...(v.deprecated === true ? { deprecated: true, deprecationWarning: v.deprecationWarning } : {}),
        name: v.name,
        schema: { openAPIV3Schema: c.schema },
        served: v.served,
        storage: v.storage,
        ...(hasStatus ? { subresources: { status: {} } } : {}),
      })),
    },
  });
}
