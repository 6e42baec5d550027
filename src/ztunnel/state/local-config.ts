import net from 'node:net';
import { readFile } from 'node:fs/promises';
import type { Node } from 'yaml';
import { YamlReader } from './yaml-reader.js';
import { MeshError } from '../../lib/errors.js';
import { canonicalIp, parseCidr, type Cidr } from '../../lib/ip.js';
import { DEFAULT_CLUSTER_ID, type GatewayAddress, type Workload } from './workload.js';
import type { Endpoint, LoadBalancerScope, Service } from './service.js';
import type { Authorization, RbacMatch, ServiceAccountMatch, StringMatch } from './policy.js';

/** A workload from local config, with the services it backs: `"ns/hostname" → {servicePort: targetPort}`. */
export interface LocalWorkload {
  readonly workload: Workload;
  readonly services: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

/** ztunnel's local config (`LOCAL_XDS_PATH`): top-level `workloads`, `services`, `policies` (ztunnel `src/admin.rs`). */
export interface LocalConfig {
  readonly workloads: readonly LocalWorkload[];
  readonly services: readonly Service[];
  readonly policies: readonly Authorization[];
}

const WORKLOAD_FIELDS = [
  'uid',
  'workloadIps',
  'waypoint',
  'networkGateway',
  'protocol',
  'networkMode',
  'name',
  'namespace',
  'trustDomain',
  'serviceAccount',
  'network',
  'workloadName',
  'workloadType',
  'canonicalName',
  'canonicalRevision',
  'hostname',
  'node',
  'nativeTunnel',
  'applicationTunnel',
  'authorizationPolicies',
  'status',
  'clusterId',
  'locality',
  'services',
  'capacity',
] as const;
const SERVICE_FIELDS = [
  'name',
  'namespace',
  'hostname',
  'vips',
  'cidrVips',
  'ports',
  'endpoints',
  'subjectAltNames',
  'waypoint',
  'loadBalancer',
  'ipFamilies',
  'canonical',
  'visibility',
] as const;
const POLICY_FIELDS = ['name', 'namespace', 'scope', 'action', 'rules', 'dryRun'] as const;
const MATCH_FIELDS = [
  'namespaces',
  'notNamespaces',
  'serviceAccounts',
  'notServiceAccounts',
  'principals',
  'notPrincipals',
  'sourceIps',
  'notSourceIps',
  'destinationIps',
  'notDestinationIps',
  'destinationPorts',
  'notDestinationPorts',
] as const;
const SCOPES: readonly LoadBalancerScope[] = ['Region', 'Zone', 'Subzone', 'Node', 'Cluster', 'Network'];

/** The text of the local config file; a file that cannot be read is an actionable ZT_ERR_LOCAL_CONFIG_INVALID. */
export async function readLocalConfigText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    throw new MeshError(
      'ZT_ERR_LOCAL_CONFIG_INVALID',
      `cannot read local config ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message} (LOCAL_XDS_PATH / --local-config must name a ztunnel local-config YAML file)`,
    );
  }
}

export async function loadLocalConfig(file: string): Promise<LocalConfig> {
  return parseLocalConfig(file, await readLocalConfigText(file));
}

/** Parses and validates local config; throws ZT_ERR_LOCAL_CONFIG_INVALID naming `file:line` and the reason. */
export function parseLocalConfig(file: string, text: string): LocalConfig {
  const { reader: r, docs } = YamlReader.parse(file, text, 'ZT_ERR_LOCAL_CONFIG_INVALID');
  if (docs.length > 1) r.fail(docs[1], '', 'local config must be a single YAML document');
  const root = docs[0];
  if (root === null || root === undefined) return Object.freeze({ workloads: [], services: [], policies: [] });
  const top = r.object(root, '', ['workloads', 'services', 'policies']);
  const workloads = r.list(top.get('workloads'), 'workloads').map((n, i) => readWorkload(r, n, `workloads[${i}]`));
  const services = r.list(top.get('services'), 'services').map((n, i) => readService(r, n, `services[${i}]`));
  const policies = r.list(top.get('policies'), 'policies').map((n, i) => readPolicy(r, n, `policies[${i}]`));
  const seen = new Map<string, string>();
  workloads.forEach((w, i) => {
    const prev = seen.get(w.workload.uid);
    if (prev !== undefined)
      r.fail(
        r.list(top.get('workloads'), '')[i],
        `workloads[${i}]`,
        `duplicate uid "${w.workload.uid}" (also ${prev})`,
      );
    seen.set(w.workload.uid, `workloads[${i}]`);
  });
  return Object.freeze({ workloads, services, policies });
}

function ip(r: YamlReader, n: Node | null | undefined, path: string): string {
  const s = r.str(n, path);
  const ip = canonicalIp(s);
  if (ip === undefined) r.fail(n, path, `"${s}" is not an IP address`);
  return ip;
}

/** `network/ip`, where the network may be empty ("/10.0.0.1"); a bare IP means the default network. */
function networkAddress(r: YamlReader, n: Node | null | undefined, path: string): string {
  const s = r.str(n, path);
  const slash = s.indexOf('/');
  const ip = canonicalIp(slash < 0 ? s : s.slice(slash + 1));
  if (ip === undefined) r.fail(n, path, `"${s}" is not "<network>/<ip>"`);
  return `${slash < 0 ? '' : s.slice(0, slash)}/${ip}`;
}

function portMap(r: YamlReader, n: Node | null | undefined, path: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, kn, v] of r.entries(n, path)) {
    const sp = r.int(kn, `${path}.${k}`, 1, 65535);
    out[String(sp)] = r.int(v, `${path}.${k}`, 0, 65535);
  }
  return out;
}

function gateway(r: YamlReader, n: Node | null | undefined, path: string): GatewayAddress | undefined {
  if (n === null || n === undefined) return undefined;
  const o = r.object(n, path, ['destination', 'hboneMtlsPort']);
  const d = o.get('destination');
  const hboneMtlsPort = r.int(o.get('hboneMtlsPort'), `${path}.hboneMtlsPort`, 1, 65535, 15008);
  if (d !== null && d !== undefined && 'items' in d) {
    const h = r.object(d, `${path}.destination`, ['namespace', 'hostname']);
    return {
      destination: {
        namespace: r.str(h.get('namespace'), `${path}.destination.namespace`),
        hostname: r.str(h.get('hostname'), `${path}.destination.hostname`),
      },
      hboneMtlsPort,
    };
  }
  return { destination: { address: networkAddress(r, d, `${path}.destination`) }, hboneMtlsPort };
}

function readWorkload(r: YamlReader, n: Node, path: string): LocalWorkload {
  const o = r.object(n, path, WORKLOAD_FIELDS);
  const g = (k: (typeof WORKLOAD_FIELDS)[number]): Node | null | undefined => o.get(k);
  const namespace = r.str(g('namespace'), `${path}.namespace`);
  const name = r.str(g('name'), `${path}.name`, '');
  const clusterId = r.str(g('clusterId'), `${path}.clusterId`, DEFAULT_CLUSTER_ID);
  const uid = r.str(g('uid'), `${path}.uid`, name === '' ? undefined : `${clusterId}//Pod/${namespace}/${name}`);
  const workloadIps = r
    .list(g('workloadIps'), `${path}.workloadIps`)
    .map((x, i) => ip(r, x, `${path}.workloadIps[${i}]`));
  const hostname = r.str(g('hostname'), `${path}.hostname`, '');
  if (workloadIps.length === 0 && hostname === '') r.fail(n, path, 'a workload needs workloadIps or a hostname');
  const services: Record<string, Record<string, number>> = {};
  for (const [k, kn, v] of r.entries(g('services'), `${path}.services`)) {
    if (!/^[^/]+\/[^/]+$/.test(k)) r.fail(kn, `${path}.services`, `key "${k}" is not "<namespace>/<hostname>"`);
    services[k] = portMap(r, v, `${path}.services.${k}`);
  }
  let locality: Workload['locality'];
  if (g('locality') !== undefined && g('locality') !== null) {
    const l = r.object(g('locality'), `${path}.locality`, ['region', 'zone', 'subzone']);
    locality = {
      region: r.str(l.get('region'), `${path}.locality.region`, ''),
      zone: r.str(l.get('zone'), `${path}.locality.zone`, ''),
      subzone: r.str(l.get('subzone'), `${path}.locality.subzone`, ''),
    };
  }
  let applicationTunnel: Workload['applicationTunnel'];
  if (g('applicationTunnel') !== undefined && g('applicationTunnel') !== null) {
    const a = r.object(g('applicationTunnel'), `${path}.applicationTunnel`, ['protocol', 'port']);
    const port = a.get('port');
    applicationTunnel = {
      protocol: r.oneOf(a.get('protocol'), `${path}.applicationTunnel.protocol`, ['NONE', 'PROXY']),
      port: port === undefined || port === null ? undefined : r.int(port, `${path}.applicationTunnel.port`, 1, 65535),
    };
  }
  const workload: Workload = {
    uid,
    workloadIps,
    waypoint: gateway(r, g('waypoint'), `${path}.waypoint`),
    networkGateway: gateway(r, g('networkGateway'), `${path}.networkGateway`),
    protocol: r.oneOf(g('protocol'), `${path}.protocol`, ['HBONE', 'TCP'], 'TCP'),
    networkMode: r.oneOf(g('networkMode'), `${path}.networkMode`, ['Standard', 'HostNetwork'], 'Standard'),
    name,
    namespace,
    trustDomain: r.str(g('trustDomain'), `${path}.trustDomain`, ''),
    serviceAccount: r.str(g('serviceAccount'), `${path}.serviceAccount`, ''),
    network: r.str(g('network'), `${path}.network`, ''),
    workloadName: r.str(g('workloadName'), `${path}.workloadName`, ''),
    workloadType: r.str(g('workloadType'), `${path}.workloadType`, ''),
    canonicalName: r.str(g('canonicalName'), `${path}.canonicalName`, ''),
    canonicalRevision: r.str(g('canonicalRevision'), `${path}.canonicalRevision`, ''),
    hostname,
    node: r.str(g('node'), `${path}.node`, ''),
    nativeTunnel: r.bool(g('nativeTunnel'), `${path}.nativeTunnel`, false),
    applicationTunnel,
    authorizationPolicies: r.strings(g('authorizationPolicies'), `${path}.authorizationPolicies`),
    status: r.oneOf(g('status'), `${path}.status`, ['Healthy', 'Unhealthy'], 'Healthy'),
    clusterId,
    locality,
    services: Object.keys(services),
    capacity: r.int(g('capacity'), `${path}.capacity`, 0, 0xffffffff, 1),
  };
  return { workload, services };
}

function readService(r: YamlReader, n: Node, path: string): Service {
  const o = r.object(n, path, SERVICE_FIELDS);
  const g = (k: (typeof SERVICE_FIELDS)[number]): Node | null | undefined => o.get(k);
  const endpoints: Record<string, Endpoint> = {};
  for (const [k, , v] of r.entries(g('endpoints'), `${path}.endpoints`)) {
    const e = r.object(v, `${path}.endpoints.${k}`, ['workloadUid', 'port', 'status']);
    endpoints[k] = {
      workloadUid: r.str(e.get('workloadUid'), `${path}.endpoints.${k}.workloadUid`, k),
      port: portMap(r, e.get('port'), `${path}.endpoints.${k}.port`),
      status: r.oneOf(e.get('status'), `${path}.endpoints.${k}.status`, ['Healthy', 'Unhealthy'], 'Healthy'),
    };
  }
  let loadBalancer: Service['loadBalancer'];
  if (g('loadBalancer') !== undefined && g('loadBalancer') !== null) {
    const lb = r.object(g('loadBalancer'), `${path}.loadBalancer`, ['routingPreferences', 'mode', 'healthPolicy']);
    loadBalancer = {
      routingPreferences: r
        .list(lb.get('routingPreferences'), `${path}.loadBalancer.routingPreferences`)
        .map((x, i) => r.oneOf(x, `${path}.loadBalancer.routingPreferences[${i}]`, SCOPES)),
      mode: r.oneOf(
        lb.get('mode'),
        `${path}.loadBalancer.mode`,
        ['Standard', 'Strict', 'Failover', 'Passthrough'],
        'Standard',
      ),
      healthPolicy: r.oneOf(
        lb.get('healthPolicy'),
        `${path}.loadBalancer.healthPolicy`,
        ['OnlyHealthy', 'AllowAll'],
        'OnlyHealthy',
      ),
    };
  }
  const ipf = g('ipFamilies');
  return {
    name: r.str(g('name'), `${path}.name`),
    namespace: r.str(g('namespace'), `${path}.namespace`),
    hostname: r.str(g('hostname'), `${path}.hostname`),
    vips: r.list(g('vips'), `${path}.vips`).map((x, i) => networkAddress(r, x, `${path}.vips[${i}]`)),
    cidrVips: r.list(g('cidrVips'), `${path}.cidrVips`).map((x, i) => cidrText(r, x, `${path}.cidrVips[${i}]`)),
    ports: portMap(r, g('ports'), `${path}.ports`),
    endpoints,
    subjectAltNames: r.strings(g('subjectAltNames'), `${path}.subjectAltNames`),
    waypoint: gateway(r, g('waypoint'), `${path}.waypoint`),
    loadBalancer,
    ipFamilies:
      ipf === undefined || ipf === null
        ? undefined
        : r.oneOf<'Dual' | 'IPv4' | 'IPv6'>(ipf, `${path}.ipFamilies`, ['Dual', 'IPv4', 'IPv6']),
    canonical: r.bool(g('canonical'), `${path}.canonical`, false),
    visibility: r.oneOf(g('visibility'), `${path}.visibility`, ['Public', 'Namespace'], 'Public'),
  };
}

function cidrText(r: YamlReader, n: Node | null | undefined, path: string): string {
  const s = r.str(n, path);
  const slash = s.indexOf('/');
  const body = slash >= 0 && net.isIP(s.slice(slash + 1).split('/')[0] ?? '') !== 0 ? s.slice(slash + 1) : s;
  if (parseCidr(body) === undefined) r.fail(n, path, `"${s}" is not a CIDR`);
  return s;
}

function cidr(r: YamlReader, n: Node, path: string): Cidr {
  const c = parseCidr(r.str(n, path));
  if (c === undefined) r.fail(n, path, `"${r.str(n, path)}" is not an IP address or CIDR`);
  return c;
}

function stringMatch(r: YamlReader, n: Node, path: string): StringMatch {
  const o = r.object(n, path, ['Exact', 'Prefix', 'Suffix', 'Presence']);
  if (o.size !== 1) r.fail(n, path, 'a string match has exactly one of Exact, Prefix, Suffix, Presence');
  const [k, v] = [...o][0]!;
  if (k === 'Presence') return { Presence: [] };
  const s = r.str(v, `${path}.${k}`);
  if (k === 'Exact') return { Exact: s };
  if (k === 'Prefix') return { Prefix: s };
  return { Suffix: s };
}

function saMatch(r: YamlReader, n: Node, path: string): ServiceAccountMatch {
  const o = r.object(n, path, ['namespace', 'serviceAccount']);
  return {
    namespace: r.str(o.get('namespace'), `${path}.namespace`),
    serviceAccount: r.str(o.get('serviceAccount'), `${path}.serviceAccount`),
  };
}

function readMatch(r: YamlReader, n: Node, path: string): RbacMatch {
  const o = r.object(n, path, MATCH_FIELDS);
  const l = <T>(k: (typeof MATCH_FIELDS)[number], f: (r: YamlReader, n: Node, p: string) => T): T[] =>
    r.list(o.get(k), `${path}.${k}`).map((x, i) => f(r, x, `${path}.${k}[${i}]`));
  const port = (rr: YamlReader, x: Node, p: string): number => rr.int(x, p, 0, 65535);
  return {
    namespaces: l('namespaces', stringMatch),
    notNamespaces: l('notNamespaces', stringMatch),
    serviceAccounts: l('serviceAccounts', saMatch),
    notServiceAccounts: l('notServiceAccounts', saMatch),
    principals: l('principals', stringMatch),
    notPrincipals: l('notPrincipals', stringMatch),
    sourceIps: l('sourceIps', cidr),
    notSourceIps: l('notSourceIps', cidr),
    destinationIps: l('destinationIps', cidr),
    notDestinationIps: l('notDestinationIps', cidr),
    destinationPorts: l('destinationPorts', port),
    notDestinationPorts: l('notDestinationPorts', port),
  };
}

function readPolicy(r: YamlReader, n: Node, path: string): Authorization {
  const o = r.object(n, path, POLICY_FIELDS, ['name', 'namespace', 'scope', 'action']);
  const rules = r
    .list(o.get('rules'), `${path}.rules`)
    .map((rule, i) =>
      r
        .list(rule, `${path}.rules[${i}]`)
        .map((clause, j) =>
          r.list(clause, `${path}.rules[${i}][${j}]`).map((m, k) => readMatch(r, m, `${path}.rules[${i}][${j}][${k}]`)),
        ),
    );
  return {
    name: r.str(o.get('name'), `${path}.name`),
    namespace: r.str(o.get('namespace'), `${path}.namespace`),
    scope: r.oneOf(o.get('scope'), `${path}.scope`, ['Global', 'Namespace', 'WorkloadSelector']),
    action: r.oneOf(o.get('action'), `${path}.action`, ['Allow', 'Deny']),
    rules,
    dryRun: r.bool(o.get('dryRun'), `${path}.dryRun`, false),
  };
}
