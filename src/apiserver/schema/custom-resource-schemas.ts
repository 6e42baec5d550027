/**
 * The CRD of each custom kind the API server serves built in (Istio's, generated from istio/api's protos, and the
 * Gateway API's, written from its Go types), looked up by API group and kind.
 */
import { GATEWAY_API_CRDS } from './gateway-api-schemas.js';
import { ISTIO_CRDS } from './istio-crds.gen.js';
import type { CustomResourceSource, JsonSchema } from './json-schema.js';

const BY_GROUP_KIND = new Map<string, CustomResourceSource>(
  [...ISTIO_CRDS, ...GATEWAY_API_CRDS].map((c) => [`${c.kind}.${c.group}`, c]),
);

/** The CRD that defines `kind` in `group`, if the server has one built in. */
export function customResourceSource(group: string, kind: string): CustomResourceSource | undefined {
  return BY_GROUP_KIND.get(`${kind}.${group}`);
}

/** The `openAPIV3Schema` of objects with this `apiVersion` and `kind`, if one of the built-in CRDs serves it. */
export function customResourceSchema(apiVersion: unknown, kind: unknown): JsonSchema | undefined {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return undefined;
  const slash = apiVersion.indexOf('/');
  const source = customResourceSource(apiVersion.slice(0, Math.max(slash, 0)), kind);
  const version = apiVersion.slice(slash + 1);
  return source?.versions.some((v) => v.name === version && v.served) === true ? source.schema : undefined;
}
