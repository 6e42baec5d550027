import net from 'node:net';
import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import {
  child,
  duplicate,
  forbidden,
  goStringSlice,
  index,
  invalid,
  notSupported,
  required,
} from '../validation/field-errors.js';
import {
  isDns1123Label,
  isDns1123Subdomain,
  isQualifiedName,
  isValidPortName,
  isValidPortNum,
} from '../validation/formats.js';
import {
  asArray,
  asNumber,
  asObject,
  asString,
  objectField,
  objectsOf,
  setDefault,
} from '../validation/json-fields.js';
import type { JsonObject } from '../validation/json-fields.js';
import { validateLabels } from '../validation/object-meta.js';
import { PROTOCOLS, oneOf } from '../validation/pod-spec.js';
import { keepStatus } from './generation.js';

/**
 * Services, after k8s.io/kubernetes `pkg/registry/core/service/strategy.go` and `storage/rest.go` (an update keeps
 * status; `clusterIP`, `clusterIPs` and node ports the client left out are kept from the stored object,
 * `patchAllocatedValues` and `NormalizeClusterIPs`), the defaults of `pkg/apis/core/v1/defaults.go`
 * (`SetDefaults_Service`), and `pkg/apis/core/validation/validation.go` (`ValidateService`,
 * `validateUpgradeDowngradeClusterIPs`). Cluster IPs and IP families are set by `cluster-ip-allocator.ts`, as
 * upstream's allocator sets them.
 */

/** ClientIP affinity lasts 3 hours unless configured (`DefaultClientIPServiceAffinitySeconds`). */
export const DEFAULT_CLIENT_IP_AFFINITY_SECONDS = 10800;
export const CLUSTER_IP_NONE = 'None';

const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];
const SESSION_AFFINITIES = ['ClientIP', 'None'];
const TRAFFIC_POLICIES = ['Cluster', 'Local'];
const IP_FAMILIES = ['IPv4', 'IPv6'];
const IP_FAMILY_POLICIES = ['PreferDualStack', 'RequireDualStack', 'SingleStack'];

function specOf(obj: KubeObject): JsonObject {
  return asObject(obj.spec) ?? {};
}

export function serviceType(spec: JsonObject): string {
  return asString(spec.type) ?? 'ClusterIP';
}

export function isHeadless(spec: JsonObject): boolean {
  const ips = asArray(spec.clusterIPs) ?? [];
  return ips.length === 1 && ips[0] === CLUSTER_IP_NONE;
}

function externallyAccessible(spec: JsonObject): boolean {
  const type = serviceType(spec);
  return (
    type === 'LoadBalancer' ||
    type === 'NodePort' ||
    (type === 'ClusterIP' && (asArray(spec.externalIPs) ?? []).length > 0)
  );
}

function defaultService(spec: JsonObject): void {
  setDefault(spec, 'type', 'ClusterIP');
  setDefault(spec, 'sessionAffinity', 'None');
  if (spec.sessionAffinity === 'ClientIP')
    setDefault(spec, 'sessionAffinityConfig', { clientIP: { timeoutSeconds: DEFAULT_CLIENT_IP_AFFINITY_SECONDS } });
  for (const p of objectsOf(spec.ports)) {
    setDefault(p, 'protocol', 'TCP');
    if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
  }
  const type = serviceType(spec);
  if (type !== 'ExternalName') setDefault(spec, 'internalTrafficPolicy', 'Cluster');
  if (externallyAccessible(spec)) setDefault(spec, 'externalTrafficPolicy', 'Cluster');
  if (type === 'LoadBalancer') setDefault(spec, 'allocateLoadBalancerNodePorts', true);
  const clusterIP = asString(spec.clusterIP) ?? '';
  if (clusterIP !== '' && (asArray(spec.clusterIPs) ?? []).length === 0) spec.clusterIPs = [clusterIP];
}

/** Fills what the client left out of an update with the stored values, so a PUT of the same manifest is idempotent. */
function patchAllocatedValues(spec: JsonObject, old: JsonObject): void {
  if (serviceType(spec) === 'ExternalName' || serviceType(old) === 'ExternalName') return;
  if ((asString(spec.clusterIP) ?? '') === '' && old.clusterIP !== undefined) spec.clusterIP = old.clusterIP;
  if ((asArray(spec.clusterIPs) ?? []).length === 0 && (asArray(old.clusterIPs) ?? []).length > 0)
    spec.clusterIPs = structuredClone(old.clusterIPs);
  const oldNodePorts = new Map(objectsOf(old.ports).map((p) => [asString(p.name) ?? '', p.nodePort]));
  const used = new Set(objectsOf(spec.ports).map((p) => p.nodePort));
  for (const p of objectsOf(spec.ports)) {
    const previous = oldNodePorts.get(asString(p.name) ?? '');
    if ((p.nodePort === undefined || p.nodePort === 0) && previous !== undefined && !used.has(previous))
      p.nodePort = previous;
  }
  if (spec.healthCheckNodePort === undefined && old.healthCheckNodePort !== undefined)
    spec.healthCheckNodePort = old.healthCheckNodePort;
  if (spec.ipFamilyPolicy === undefined && old.ipFamilyPolicy !== undefined) spec.ipFamilyPolicy = old.ipFamilyPolicy;
  if (spec.ipFamilies === undefined && old.ipFamilies !== undefined) spec.ipFamilies = structuredClone(old.ipFamilies);
}

/** Go's `%#v` of the `core.ServicePort` key upstream reports duplicate ports with. */
function goServicePortKey(protocol: string, port: number): { go: string } {
  return {
    go: `core.ServicePort{Name:"", Protocol:${JSON.stringify(protocol)}, AppProtocol:(*string)(nil), Port:${port}, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}`,
  };
}

function validateServicePort(p: JsonObject, requireName: boolean, names: Set<string>, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const name = asString(p.name) ?? '';
  if (requireName && name === '') errs.push(required(child(path, 'name')));
  else if (name !== '') {
    for (const m of isDns1123Label(name)) errs.push(invalid(child(path, 'name'), name, m));
    if (names.has(name)) errs.push(duplicate(child(path, 'name'), name));
    names.add(name);
  }
  const port = asNumber(p.port) ?? 0;
  for (const m of isValidPortNum(port)) errs.push(invalid(child(path, 'port'), port, m));
  errs.push(...oneOf(p.protocol, child(path, 'protocol'), PROTOCOLS));
  const target = p.targetPort;
  if (typeof target === 'number')
    for (const m of isValidPortNum(target)) errs.push(invalid(child(path, 'targetPort'), target, m));
  if (typeof target === 'string')
    for (const m of isValidPortName(target)) errs.push(invalid(child(path, 'targetPort'), target, m));
  const appProtocol = asString(p.appProtocol);
  if (appProtocol !== undefined)
    for (const m of isQualifiedName(appProtocol)) errs.push(invalid(child(path, 'appProtocol'), appProtocol, m));
  return errs;
}

function validateClusterIPs(spec: JsonObject): StatusCause[] {
  const errs: StatusCause[] = [];
  const ips = asArray(spec.clusterIPs) ?? [];
  const clusterIP = asString(spec.clusterIP) ?? '';
  if (clusterIP !== '' && ips.length === 0) errs.push(required('spec.clusterIPs'));
  else if (clusterIP !== '' && clusterIP !== ips[0])
    errs.push(invalid('spec.clusterIPs', goStringSlice(ips), 'first value must match `clusterIP`'));
  else if (clusterIP === '' && ips.length > 0)
    errs.push(invalid('spec.clusterIPs', goStringSlice(ips), 'must be empty when `clusterIP` is not specified'));
  if (ips.includes(CLUSTER_IP_NONE) && ips.length > 1)
    errs.push(invalid('spec.clusterIPs', goStringSlice(ips), "'None' must be the first and only value"));
  ips.forEach((ip, i) => {
    const s = asString(ip) ?? '';
    if (s !== CLUSTER_IP_NONE && net.isIP(s) === 0) {
      errs.push(
        invalid(index('spec.clusterIPs', i), s, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
      );
    }
  });
  const policy = spec.ipFamilyPolicy;
  if (policy !== undefined && policy !== null) errs.push(...oneOf(policy, 'spec.ipFamilyPolicy', IP_FAMILY_POLICIES));
  const seen = new Set<string>();
  (asArray(spec.ipFamilies) ?? []).forEach((f, i) => {
    const fam = asString(f) ?? '';
    const at = index('spec.ipFamilies', i);
    if (!IP_FAMILIES.includes(fam)) errs.push(notSupported(at, fam, IP_FAMILIES));
    else if (seen.has(fam)) errs.push(duplicate(at, fam));
    seen.add(fam);
  });
  return errs;
}

export function validateService(obj: KubeObject): StatusCause[] {
  const spec = specOf(obj);
  const errs: StatusCause[] = [];
  const type = serviceType(spec);
  const headless = isHeadless(spec);
  const ports = asArray(spec.ports) ?? [];
  if (ports.length === 0 && !headless && type !== 'ExternalName') errs.push(required('spec.ports'));
  if ((type === 'LoadBalancer' || type === 'NodePort') && headless)
    errs.push(invalid('spec.clusterIPs[0]', CLUSTER_IP_NONE, `may not be set to 'None' for ${type} services`));
  if (type === 'ExternalName') {
    for (const f of ['clusterIPs', 'ipFamilies'])
      if ((asArray(spec[f]) ?? []).length > 0)
        errs.push(forbidden(`spec.${f}`, 'may not be set for ExternalName services'));
    if (spec.ipFamilyPolicy !== undefined && spec.ipFamilyPolicy !== null)
      errs.push(forbidden('spec.ipFamilyPolicy', 'may not be set for ExternalName services'));
    const cname = (asString(spec.externalName) ?? '').replace(/\.$/, '');
    if (cname === '') errs.push(required('spec.externalName'));
    else for (const m of isDns1123Subdomain(cname)) errs.push(invalid('spec.externalName', cname, m));
  }
  const names = new Set<string>();
  ports.forEach((p, i) =>
    errs.push(...validateServicePort(asObject(p) ?? {}, ports.length > 1, names, index('spec.ports', i))),
  );
  errs.push(...validateLabels(asObject(spec.selector), 'spec.selector'));
  errs.push(...oneOf(spec.sessionAffinity, 'spec.sessionAffinity', SESSION_AFFINITIES));
  if (
    spec.sessionAffinity === 'None' &&
    spec.sessionAffinityConfig !== undefined &&
    spec.sessionAffinityConfig !== null
  )
    errs.push(forbidden('spec.sessionAffinityConfig', 'must not be set when session affinity is None'));
  if (type !== 'ExternalName') errs.push(...validateClusterIPs(spec));
  errs.push(...oneOf(spec.type, 'spec.type', SERVICE_TYPES));
  const seen = new Set<string>();
  ports.forEach((entry, i) => {
    const p = asObject(entry) ?? {};
    if (type === 'ClusterIP' && (asNumber(p.nodePort) ?? 0) !== 0)
      errs.push(forbidden(child(index('spec.ports', i), 'nodePort'), "may not be used when `type` is 'ClusterIP'"));
    const protocol = asString(p.protocol) ?? '';
    const port = asNumber(p.port) ?? 0;
    const k = `${protocol}/${port}`;
    if (seen.has(k)) errs.push(duplicate(index('spec.ports', i), goServicePortKey(protocol, port)));
    seen.add(k);
  });
  if (spec.internalTrafficPolicy !== undefined)
    errs.push(...oneOf(spec.internalTrafficPolicy, 'spec.internalTrafficPolicy', TRAFFIC_POLICIES));
  if (!externallyAccessible(spec)) {
    if ((asString(spec.externalTrafficPolicy) ?? '') !== '')
      errs.push(
        invalid(
          'spec.externalTrafficPolicy',
          asString(spec.externalTrafficPolicy) ?? '',
          'may only be set for externally-accessible services',
        ),
      );
  } else {
    errs.push(...oneOf(spec.externalTrafficPolicy, 'spec.externalTrafficPolicy', TRAFFIC_POLICIES));
  }
  return errs;
}

/** The primary cluster IP never changes once set, but across ExternalName (`validateUpgradeDowngradeClusterIPs`). */
function validateClusterIPsUpdate(spec: JsonObject, old: JsonObject): StatusCause[] {
  if (serviceType(spec) === 'ExternalName' || serviceType(old) === 'ExternalName') return [];
  if (isHeadless(spec) && isHeadless(old)) return [];
  const now = asArray(spec.clusterIPs) ?? [];
  const before = asArray(old.clusterIPs) ?? [];
  const shown = goStringSlice(now.length === 0 ? undefined : now);
  if (before.length > 0 && now.length === 0)
    return [invalid('spec.clusterIPs[0]', shown, 'primary clusterIP can not be unset')];
  const errs: StatusCause[] = [];
  before.forEach((ip, i) => {
    if (i < now.length && (i === 0 || before.length === now.length) && now[i] !== ip)
      errs.push(invalid(index('spec.clusterIPs', i), shown, 'may not change once set'));
  });
  return errs;
}

export const serviceStrategy: Strategy = {
  prepareForCreate(obj) {
    defaultService(objectField(obj, 'spec'));
    obj.status = { loadBalancer: {} };
  },
  prepareForUpdate(obj, old) {
    const spec = objectField(obj, 'spec');
    patchAllocatedValues(spec, specOf(old));
    defaultService(spec);
    keepStatus(obj, old);
  },
  validate: validateService,
  validateUpdate(obj, old) {
    return [...validateClusterIPsUpdate(specOf(obj), specOf(old)), ...validateService(obj)];
  },
};
