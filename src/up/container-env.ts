/**
 * What kubelet hands a container's process: its env (containerEnv) and its argv (`command` then
 * `args`), with `$(VAR)` references expanded as Kubernetes expands them (third_party/forked/golang/expansion):
 * a defined VAR is replaced, an undefined one stays as written, and `$$` is a literal `$`.
 *
 * amesh up's containers are processes on the host's filesystem, so their PATH is the host's, after node's own
 * directory and amesh's `bin/` (where `amesh` itself is: the stand-in for an image that has it).
 */
import path from 'node:path';
import type { V1Container, V1EnvVar, V1Pod, V1Service } from '@kubernetes/client-node';
import { packageRoot } from '../lib/package-root.js';
import { podFieldValue, resourceFieldValue, type PodAddresses } from './downward-api.js';
import type { KubeletSources } from './kubelet-sources.js';
import { ContainerCreateError } from './processes.js';
import { serviceEnv } from './service-env.js';

const DEFAULT_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
const VAR_REF = /\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g;

/** `text` with each `$(VAR)` that `vars` defines replaced by its value, and each `$$` by `$`. */
export function expandVarRefs(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(VAR_REF, (ref, name: string | undefined) => (name === undefined ? '$' : (vars[name] ?? ref)));
}

/** The ConfigMaps and Secrets env reads. */
export type EnvSources = Pick<KubeletSources, 'configMap' | 'secret'>;

const configError = (message: string): ContainerCreateError =>
  new ContainerCreateError('CreateContainerConfigError', message);

/** The data of ConfigMap or Secret `name` (Secrets' values decoded); undefined when it is missing and `optional`. */
function sourceData(
  sources: EnvSources,
  kind: 'ConfigMap' | 'Secret',
  namespace: string,
  name: string,
  optional: boolean | undefined,
): Record<string, string> | undefined {
  if (kind === 'ConfigMap') {
    const cm = sources.configMap(namespace, name);
    if (cm === undefined && optional !== true) throw configError(`configmap "${name}" not found`);
    return cm?.data ?? (cm === undefined ? undefined : {});
  }
  const secret = sources.secret(namespace, name);
  if (secret === undefined && optional !== true) throw configError(`secret "${name}" not found`);
  if (secret === undefined) return undefined;
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
}

/**
 * The container's environment, as kubelet's makeEnvironmentVariables builds it: PATH, HOSTNAME (the pod's name, as
 * a container's hostname is) and HOME; the Service variables (`service-env.ts`); `envFrom` (each ConfigMap or
 * Secret's keys, with its prefix); then `env` in order (a value, which may refer to what came before, or a
 * fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef). A later definition overrides an earlier one. A
 * missing ConfigMap, Secret or key that is not `optional` is kubelet's CreateContainerConfigError.
 */
export function containerEnv(
  pod: V1Pod,
  c: V1Container,
  at: PodAddresses,
  services: readonly V1Service[] = [],
  sources: EnvSources = { configMap: () => undefined, secret: () => undefined },
): Record<string, string> {
  const namespace = pod.metadata?.namespace ?? '';
  const env: Record<string, string> = {
    PATH: [path.dirname(process.execPath), path.join(packageRoot(), 'bin'), process.env['PATH'] ?? DEFAULT_PATH].join(
      ':',
    ),
    HOSTNAME: pod.metadata?.name ?? '',
    HOME: '/root',
    ...serviceEnv(pod, services),
  };
  for (const from of c.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (ref === undefined) continue;
    const data = sourceData(
      sources,
      from.configMapRef !== undefined ? 'ConfigMap' : 'Secret',
      namespace,
      ref.name ?? '',
      ref.optional,
    );
    for (const [k, v] of Object.entries(data ?? {})) env[`${from.prefix ?? ''}${k}`] = v;
  }
  for (const e of c.env ?? ([] as V1EnvVar[])) {
    const from = e.valueFrom;
    if (from === undefined) {
      env[e.name] = expandVarRefs(e.value ?? '', env);
      continue;
    }
    let value: string | undefined;
    if (from.fieldRef !== undefined) value = podFieldValue(pod, from.fieldRef, at) ?? '';
    else if (from.resourceFieldRef !== undefined) value = resourceFieldValue(pod, c, from.resourceFieldRef) ?? '';
    else {
      const ref = from.configMapKeyRef ?? from.secretKeyRef;
      if (ref === undefined) continue;
      const kind = from.configMapKeyRef !== undefined ? 'ConfigMap' : 'Secret';
      const data = sourceData(sources, kind, namespace, ref.name ?? '', ref.optional);
      value = data?.[ref.key];
      if (value === undefined && data !== undefined && ref.optional !== true)
        throw configError(`couldn't find key ${ref.key} in ${kind} ${namespace}/${ref.name ?? ''}`);
    }
    if (value !== undefined) env[e.name] = value;
  }
  return env;
}

/** The process's argv: `command` then `args`, each expanded against the container's environment. */
export function containerArgv(c: V1Container, env: Readonly<Record<string, string>>): string[] {
  return [...(c.command ?? []), ...(c.args ?? [])].map((a) => expandVarRefs(a, env));
}
