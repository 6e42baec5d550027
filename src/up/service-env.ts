/**
 * The Service environment variables kubelet gives every container (k8s.io/kubernetes
 * `pkg/kubelet/envvars/envvars.go` `FromServices`, and `getServiceEnvVarMap` for which Services): for each Service
 * of the pod's namespace with a cluster IP (when the pod's `enableServiceLinks` is not false), and always for
 * `default/kubernetes`, `<NAME>_SERVICE_HOST` and `_SERVICE_PORT` (and `_SERVICE_PORT_<PORT NAME>`), and the Docker
 * links form `<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>` and its `_PROTO`, `_PORT` and `_ADDR`, NAME being the
 * Service's name in upper case with `-` as `_`. A Service of the pod's namespace wins over default's of the same
 * name.
 */
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { compareStrings } from '../lib/compare-strings.js';

const envName = (s: string): string => s.toUpperCase().replace(/-/g, '_');

function linksOf(svc: V1Service, out: Record<string, string>): void {
  const ip = svc.spec?.clusterIP ?? '';
  const ports = svc.spec?.ports ?? [];
  if (ip === '' || ip === 'None' || ports.length === 0) return;
  const name = envName(svc.metadata?.name ?? '');
  const first = ports[0]!;
  out[`${name}_SERVICE_HOST`] = ip;
  out[`${name}_SERVICE_PORT`] = String(first.port);
  for (const p of ports) if ((p.name ?? '') !== '') out[`${name}_SERVICE_PORT_${envName(p.name!)}`] = String(p.port);
  out[`${name}_PORT`] = `${(first.protocol ?? 'TCP').toLowerCase()}://${ip}:${String(first.port)}`;
  for (const p of ports) {
    const proto = (p.protocol ?? 'TCP').toLowerCase();
    const prefix = `${name}_PORT_${String(p.port)}_${proto.toUpperCase()}`;
    out[prefix] = `${proto}://${ip}:${String(p.port)}`;
    out[`${prefix}_PROTO`] = proto;
    out[`${prefix}_PORT`] = String(p.port);
    out[`${prefix}_ADDR`] = ip;
  }
}

/** The Service variables of a container of `pod`, given every Service the cluster has. */
export function serviceEnv(pod: V1Pod, services: readonly V1Service[]): Record<string, string> {
  const namespace = pod.metadata?.namespace ?? '';
  const links = pod.spec?.enableServiceLinks !== false;
  const chosen = new Map<string, V1Service>();
  const byName = (a: V1Service, b: V1Service): number => compareStrings(a.metadata?.name ?? '', b.metadata?.name ?? '');
  const kubernetes = services.find((s) => s.metadata?.namespace === 'default' && s.metadata.name === 'kubernetes');
  if (kubernetes !== undefined) chosen.set('kubernetes', kubernetes);
  if (links)
    for (const s of services.filter((x) => x.metadata?.namespace === namespace).sort(byName))
      chosen.set(s.metadata?.name ?? '', s);
  const out: Record<string, string> = {};
  for (const s of chosen.values()) linksOf(s, out);
  return out;
}
