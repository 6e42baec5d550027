/**
 * istiod's mesh config as the waypoint's resources read it: the `mesh` key of the `istio` ConfigMap in istiod's
 * namespace (istio.io/api `mesh/v1alpha1/config.proto` as YAML), parsed once per change. What is read of it:
 * `extensionProviders` (`extension-providers.ts`) and `accessLogFile` (set: proxies log each request).
 */
import { parse } from 'yaml';
import type { ResourceOf } from '../registry/manifest-dir.js';

export type MeshConfig = Readonly<Record<string, unknown>>;

/** The mesh config of the `istio` ConfigMap of `namespace`; undefined without one, or one that is not YAML. */
export function readMeshConfig(
  configMaps: readonly ResourceOf<'ConfigMap'>[],
  namespace: string,
): { mesh: MeshConfig | undefined; warnings: string[] } {
  const cm = configMaps.find((c) => c.metadata.namespace === namespace && c.metadata.name === 'istio');
  const text = cm?.spec.data?.['mesh'];
  if (typeof text !== 'string') return { mesh: undefined, warnings: [] };
  try {
    const mesh: unknown = parse(text);
    return typeof mesh === 'object' && mesh !== null && !Array.isArray(mesh)
      ? { mesh: mesh as MeshConfig, warnings: [] }
      : { mesh: undefined, warnings: [`ConfigMap ${namespace}/istio: mesh is not a mapping; it is not read`] };
  } catch (e) {
    return {
      mesh: undefined,
      warnings: [`ConfigMap ${namespace}/istio: mesh is not YAML (${(e as Error).message}); it is not read`],
    };
  }
}

/** Whether meshConfig.accessLogFile asks proxies to log each request (Istio's demo profile sets `/dev/stdout`). */
export function accessLogOn(mesh: MeshConfig | undefined): boolean {
  const f = mesh?.['accessLogFile'];
  return typeof f === 'string' && f !== '';
}
