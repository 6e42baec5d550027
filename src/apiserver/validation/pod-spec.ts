import type { StatusCause } from '../api-error.js';
import { child, duplicate, index, invalid, notSupported, required } from './field-errors.js';
import { inclusiveRangeError, isDns1123Label, isValidPortName, isValidPortNum, nameIsDnsSubdomain } from './formats.js';
import { asArray, asNumber, asObject, asString, objectField, objectsOf, setDefault } from './json-fields.js';
import type { JsonObject } from './json-fields.js';
import { validateAnnotations, validateLabels } from './object-meta.js';

/**
 * The PodSpec shared by Pods and the pod templates of workloads: the defaults k8s.io/kubernetes
 * `pkg/apis/core/v1/defaults.go` applies on decode (`SetDefaults_PodSpec`, `SetDefaults_Container`,
 * `SetDefaults_Probe`) and the checks of `pkg/apis/core/validation/validation.go` (`ValidatePodSpec`,
 * `validateContainers`, `validateContainerPorts`) for the fields amesh's users write: containers, ports,
 * restart and DNS policy, node and service account names. Volume sources, security contexts and resources
 * are stored as given.
 */

/** Seconds a pod gets between SIGTERM and SIGKILL unless it says otherwise (`DefaultTerminationGracePeriodSeconds`). */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;
/** Where a container's termination message is read from (`TerminationMessagePathDefault`). */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';
/** The scheduler pods go to unless they name one (`DefaultSchedulerName`). */
export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';
/** Probe timings when unset (`SetDefaults_Probe`): 1 s timeout, every 10 s, 1 success, 3 failures. */
const PROBE_DEFAULTS = { timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 } as const;

/** Port protocols, sorted as upstream lists them in `Unsupported value` errors. */
export const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const TERMINATION_MESSAGE_POLICIES = ['File', 'FallbackToLogsOnError'];
const CONTAINER_LISTS = ['initContainers', 'containers'] as const;
const PROBES = ['livenessProbe', 'readinessProbe', 'startupProbe'] as const;
const MAX_INT32 = 2147483647;

/** `Always` for `:latest` or untagged images, `IfNotPresent` for any other tag or a digest (`SetDefaults_Container`). */
export function defaultPullPolicy(image: string): string {
  if (image.includes('@')) return 'IfNotPresent';
  const last = image.slice(image.lastIndexOf('/') + 1);
  const colon = last.lastIndexOf(':');
  const tag = colon < 0 ? 'latest' : last.slice(colon + 1);
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}

export function defaultPodSpec(spec: JsonObject): void {
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'terminationGracePeriodSeconds', DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
  setDefault(spec, 'securityContext', {});
  setDefault(spec, 'schedulerName', DEFAULT_SCHEDULER_NAME);
  setDefault(spec, 'enableServiceLinks', true);
  for (const list of CONTAINER_LISTS) for (const c of objectsOf(spec[list])) defaultContainer(c);
}

function defaultContainer(c: JsonObject): void {
  setDefault(c, 'terminationMessagePath', DEFAULT_TERMINATION_MESSAGE_PATH);
  setDefault(c, 'terminationMessagePolicy', 'File');
  setDefault(c, 'imagePullPolicy', defaultPullPolicy(asString(c.image) ?? ''));
  setDefault(c, 'resources', {});
  for (const p of objectsOf(c.ports)) setDefault(p, 'protocol', 'TCP');
  for (const probeName of PROBES) {
    const probe = asObject(c[probeName]);
    if (probe === undefined) continue;
    for (const [k, v] of Object.entries(PROBE_DEFAULTS)) setDefault(probe, k, v);
    const httpGet = asObject(probe.httpGet);
    if (httpGet !== undefined) {
      setDefault(httpGet, 'path', '/');
      setDefault(httpGet, 'scheme', 'HTTP');
    }
  }
}

/** Defaults of a workload's `spec.template`: the pod spec's, on the template's spec. */
export function defaultPodTemplate(template: JsonObject): void {
  defaultPodSpec(objectField(template, 'spec'));
}

export function validatePodSpec(spec: JsonObject, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const names = new Set<string>();
  for (const list of CONTAINER_LISTS) {
    const containers = asArray(spec[list]) ?? [];
    const listPath = child(path, list);
    if (list === 'containers' && containers.length === 0) errs.push(required(listPath));
    containers.forEach((entry, i) => errs.push(...validateContainer(asObject(entry) ?? {}, index(listPath, i), names)));
  }
  errs.push(...oneOf(spec.restartPolicy, child(path, 'restartPolicy'), RESTART_POLICIES));
  errs.push(...oneOf(spec.dnsPolicy, child(path, 'dnsPolicy'), DNS_POLICIES));
  errs.push(...validateLabels(asObject(spec.nodeSelector), child(path, 'nodeSelector')));
  for (const f of ['serviceAccountName', 'nodeName'] as const) {
    const v = asString(spec[f]) ?? '';
    if (v !== '') for (const m of nameIsDnsSubdomain(v, false)) errs.push(invalid(child(path, f), v, m));
  }
  for (const f of ['hostname', 'subdomain'] as const) {
    const v = asString(spec[f]) ?? '';
    if (v !== '') for (const m of isDns1123Label(v)) errs.push(invalid(child(path, f), v, m));
  }
  const deadline = asNumber(spec.activeDeadlineSeconds);
  if (deadline !== undefined && (deadline < 1 || deadline > MAX_INT32))
    errs.push(invalid(child(path, 'activeDeadlineSeconds'), deadline, inclusiveRangeError(1, MAX_INT32)));
  const volumes = new Set<string>();
  (asArray(spec.volumes) ?? []).forEach((entry, i) => {
    const name = asString(asObject(entry)?.name) ?? '';
    const at = child(index(child(path, 'volumes'), i), 'name');
    if (name === '') errs.push(required(at));
    else for (const m of isDns1123Label(name)) errs.push(invalid(at, name, m));
    if (volumes.has(name)) errs.push(duplicate(at, name));
    volumes.add(name);
  });
  return errs;
}

/** `Required value` when empty, `Unsupported value` when not one of `valid`. */
export function oneOf(v: unknown, path: string, valid: readonly string[]): StatusCause[] {
  const s = asString(v) ?? '';
  if (s === '') return [required(path)];
  return valid.includes(s) ? [] : [notSupported(path, s, valid)];
}

function validateContainer(c: JsonObject, path: string, names: Set<string>): StatusCause[] {
  const errs: StatusCause[] = [];
  const name = asString(c.name) ?? '';
  if (name === '') errs.push(required(child(path, 'name')));
  else for (const m of isDns1123Label(name)) errs.push(invalid(child(path, 'name'), name, m));
  if (name !== '' && names.has(name)) errs.push(duplicate(child(path, 'name'), name));
  names.add(name);
  if ((asString(c.image) ?? '') === '') errs.push(required(child(path, 'image')));
  errs.push(
    ...oneOf(c.terminationMessagePolicy, child(path, 'terminationMessagePolicy'), TERMINATION_MESSAGE_POLICIES),
  );
  errs.push(...validateContainerPorts(asArray(c.ports) ?? [], child(path, 'ports')));
  (asArray(c.env) ?? []).forEach((entry, i) => {
    if ((asString(asObject(entry)?.name) ?? '') === '')
      errs.push(required(child(index(child(path, 'env'), i), 'name')));
  });
  errs.push(...oneOf(c.imagePullPolicy, child(path, 'imagePullPolicy'), PULL_POLICIES));
  return errs;
}

function validateContainerPorts(ports: unknown[], path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const names = new Set<string>();
  ports.forEach((entry, i) => {
    const p = asObject(entry) ?? {};
    const at = index(path, i);
    const name = asString(p.name) ?? '';
    if (name !== '') {
      const msgs = isValidPortName(name);
      for (const m of msgs) errs.push(invalid(child(at, 'name'), name, m));
      if (msgs.length === 0 && names.has(name)) errs.push(duplicate(child(at, 'name'), name));
      names.add(name);
    }
    const containerPort = asNumber(p.containerPort) ?? 0;
    if (containerPort === 0) errs.push(required(child(at, 'containerPort')));
    else
      for (const m of isValidPortNum(containerPort)) errs.push(invalid(child(at, 'containerPort'), containerPort, m));
    const hostPort = asNumber(p.hostPort) ?? 0;
    if (hostPort !== 0)
      for (const m of isValidPortNum(hostPort)) errs.push(invalid(child(at, 'hostPort'), hostPort, m));
    errs.push(...oneOf(p.protocol, child(at, 'protocol'), PROTOCOLS));
  });
  return errs;
}

/** A workload's `spec.template`: its labels and annotations, then its pod spec (`ValidatePodTemplateSpec`). */
export function validatePodTemplateSpec(template: JsonObject, path: string): StatusCause[] {
  const meta = asObject(template.metadata) ?? {};
  return [
    ...validateLabels(asObject(meta.labels), child(path, 'metadata.labels')),
    ...validateAnnotations(asObject(meta.annotations), child(path, 'metadata.annotations')),
    ...validatePodSpec(asObject(template.spec) ?? {}, child(path, 'spec')),
  ];
}
