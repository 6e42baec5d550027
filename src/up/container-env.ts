/**
 * What kubelet hands a container's process: its env (the container's `env` in order, downward-API fieldRefs
 * resolved as pkg/kubelet/kubelet_pods.go podFieldSelectorRuntimeValue does) and its argv (`command` then
 * `args`), with `$(VAR)` references expanded as Kubernetes expands them (third_party/forked/golang/expansion):
 * a defined VAR is replaced, an undefined one stays as written, and `$$` is a literal `$`.
 *
 * amesh up's containers are processes on the host's filesystem, so their PATH is the host's, after node's own
 * directory and amesh's `bin/` (where `amesh` itself is: the stand-in for an image that has it).
 */
import path from 'node:path';
import type { V1Container, V1EnvVar, V1Pod, V1Service } from '@kubernetes/client-node';
import { packageRoot } from '../lib/package-root.js';
import { serviceEnv } from './service-env.js';

const DEFAULT_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
const VAR_REF = /\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g;

/** `text` with each `$(VAR)` that `vars` defines replaced by its value, and each `$$` by `$`. */
export function expandVarRefs(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(VAR_REF, (ref, name: string | undefined) => (name === undefined ? '$' : (vars[name] ?? ref)));
}

/**
 * The container's environment: PATH, HOSTNAME (the pod's name, as a container's hostname is) and HOME, the
 * Service variables (`service-env.ts`), then its `env`, which may refer to them and overrides them.
 */
export function containerEnv(
  pod: V1Pod,
  c: V1Container,
  podIp: string,
  hostIp: string,
  services: readonly V1Service[] = [],
): Record<string, string> {
  const fields: Readonly<Record<string, string>> = {
    'metadata.name': pod.metadata?.name ?? '',
    'metadata.namespace': pod.metadata?.namespace ?? '',
    'metadata.uid': pod.metadata?.uid ?? '',
    'spec.nodeName': pod.spec?.nodeName ?? '',
    'spec.serviceAccountName': pod.spec?.serviceAccountName ?? 'default',
    'status.podIP': podIp,
    'status.podIPs': podIp,
    'status.hostIP': hostIp,
    'status.hostIPs': hostIp,
  };
  const env: Record<string, string> = {
    PATH: [path.dirname(process.execPath), path.join(packageRoot(), 'bin'), process.env['PATH'] ?? DEFAULT_PATH].join(
      ':',
    ),
    HOSTNAME: pod.metadata?.name ?? '',
    HOME: '/root',
    ...serviceEnv(pod, services),
  };
  for (const e of c.env ?? ([] as V1EnvVar[])) {
    const ref = e.valueFrom?.fieldRef?.fieldPath;
    env[e.name] = ref !== undefined ? (fields[ref] ?? '') : expandVarRefs(e.value ?? '', env);
  }
  return env;
}

/** The process's argv: `command` then `args`, each expanded against the container's environment. */
export function containerArgv(c: V1Container, env: Readonly<Record<string, string>>): string[] {
  return [...(c.command ?? []), ...(c.args ?? [])].map((a) => expandVarRefs(a, env));
}
