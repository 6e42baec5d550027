/**
 * The mesh configuration the istiod chart writes into the `istio` ConfigMap (istio
 * manifests/charts/istio-control/istio-discovery/templates/configmap.yaml): its own defaults (the trust domain
 * `cluster.local`, the root namespace, Prometheus as the default metrics provider, the proxies' discovery address,
 * image type and tracer) with `values.meshConfig` (spec.meshConfig included) laid over them.
 */
import { isRecord } from '../lib/record.js';
import { textAt, truthy } from './chart-helpers.js';
import { at, merged, type Tree } from './value-tree.js';

/** Whether the chart names Prometheus (`default-prometheus` in _helpers.tpl): telemetry on, no defaultProviders. */
function defaultPrometheus(values: Tree): boolean {
  return (
    !truthy(at(values, 'meshConfig.defaultProviders')) &&
    truthy(at(values, 'telemetry.enabled')) &&
    truthy(at(values, 'telemetry.v2.enabled')) &&
    truthy(at(values, 'telemetry.v2.prometheus.enabled'))
  );
}

function tracing(values: Tree): Tree | undefined {
  const tracer = at(values, 'global.proxy.tracer');
  const namespace = String(at(values, 'global.istioNamespace'));
  const setting = (name: string): unknown => at(values, `global.tracer.${name}`);
  switch (tracer) {
    case 'zipkin':
      return { zipkin: { address: setting('zipkin.address') || `zipkin.${namespace}:9411` } };
    case 'datadog':
      return { datadog: { address: setting('datadog.address') || '$(HOST_IP):8126' } };
    case 'lightstep':
      return {
        lightstep: { address: setting('lightstep.address'), accessToken: setting('lightstep.accessToken') },
      };
    case 'stackdriver':
      return {
        stackdriver: {
          debug: setting('stackdriver.debug') || false,
          maxNumberOfAttributes: setting('stackdriver.maxNumberOfAttributes') || 200,
          maxNumberOfAnnotations: setting('stackdriver.maxNumberOfAnnotations') || 200,
          maxNumberOfMessageEvents: setting('stackdriver.maxNumberOfMessageEvents') || 200,
        },
      };
    default:
      return undefined;
  }
}

/** The `mesh` of the `istio` ConfigMap, for istiod in `namespace`. */
export function meshConfig(values: Tree, namespace: string): Tree {
  const revision = textAt(values, 'revision');
  const imageType = at(values, 'global.proxy.variant') || at(values, 'global.variant');
  const meshId = at(values, 'global.meshID');
  const trace = tracing(values);
  const defaults: Tree = {
    trustDomain: 'cluster.local',
    rootNamespace: at(values, 'meshConfig.rootNamespace') || at(values, 'global.istioNamespace'),
    ...(defaultPrometheus(values) ? { defaultProviders: { metrics: ['prometheus'] } } : {}),
    defaultConfig: {
      ...(truthy(meshId) ? { meshId } : {}),
      ...(truthy(imageType) ? { image: { imageType } } : {}),
      ...(trace === undefined ? {} : { tracing: trace }),
      discoveryAddress: `istiod${revision === '' ? '' : `-${revision}`}.${namespace}.svc:15012`,
    },
  };
  const overlay = at(values, 'meshConfig');
  return isRecord(overlay) ? merged(defaults, overlay) : defaults;
}
