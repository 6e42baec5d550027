/**
 * Validation of one manifest document the way the Kubernetes API would, for the fields amesh reads: types
 * (label and selector values are strings, lists are lists), enums, DNS-1123 names and unknown fields (kubectl's
 * strict field validation). A document that fails is rejected, as the API server would refuse it. Values the API
 * server would accept but amesh cannot use (a `podIP` that is not an IP, a port out of range, a port string in an
 * AuthorizationPolicy that is not a number) are warnings; the conversion skips such a value, as Istio's ambient
 * controller does (istio `pilot/pkg/serviceregistry/ambient/authorization.go` `stringToPort`, `stringToIP`).
 *
 * Written by hand over the YAML node tree rather than with a JSON-schema library: every problem must carry the
 * line of the offending node, and the schemas below cover only the fields amesh reads.
 */
import net from 'node:net';
import { isMap, isScalar, isSeq, type LineCounter, type Node, type Scalar } from 'yaml';
import { ipBytes } from '../../lib/ip.js';

type Check = (v: unknown) => string | undefined;

export type Schema =
  | { readonly t: 'string'; readonly enum?: readonly string[]; readonly check?: Check; readonly warn?: Check }
  | { readonly t: 'int'; readonly warn?: Check }
  | { readonly t: 'bool' }
  | { readonly t: 'intOrString'; readonly warn?: Check }
  | { readonly t: 'list'; readonly of: Schema }
  | {
      readonly t: 'object';
      readonly fields: Readonly<Record<string, Schema>>;
      readonly required?: readonly string[];
      readonly open?: boolean;
    }
  | { readonly t: 'map'; readonly of: Schema; readonly key?: Check }
  | { readonly t: 'any' };

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

const dns1123Label: Check = (v) =>
  typeof v === 'string' && v.length <= 63 && DNS1123_LABEL.test(v)
    ? undefined
    : `"${String(v)}" is not a DNS-1123 label (lower case alphanumerics and '-', at most 63)`;
const dns1123Subdomain: Check = (v) =>
  typeof v === 'string' && v.length <= 253 && DNS1123_SUBDOMAIN.test(v)
    ? undefined
    : `"${String(v)}" is not a DNS-1123 subdomain (lower case alphanumerics, '-' and '.', at most 253)`;

/** A label key: `[prefix/]name`, prefix a DNS-1123 subdomain, name at most 63 characters. */
const labelKey: Check = (k) => {
  const s = String(k);
  const slash = s.lastIndexOf('/');
  const name = slash < 0 ? s : s.slice(slash + 1);
  const bad =
    (slash >= 0 && dns1123Subdomain(s.slice(0, slash)) !== undefined) || name.length > 63 || !LABEL_NAME.test(name);
  return bad ? `label key "${s}" is not a qualified name` : undefined;
};
const labelValue: Check = (v) =>
  typeof v === 'string' && (v === '' || (v.length <= 63 && LABEL_NAME.test(v)))
    ? undefined
    : `label value "${String(v)}" is not valid (at most 63 alphanumerics, '-', '_' or '.')`;

const portNumber: Check = (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 65535
    ? undefined
    : `port ${String(v)} is out of range 1..65535; ignored`;
const anyPort: Check = (v) => (typeof v === 'string' ? undefined : portNumber(v));
const ipAddress: Check = (v) =>
  typeof v === 'string' && ipBytes(v) !== undefined ? undefined : `"${String(v)}" is not an IP address; ignored`;
const clusterIp: Check = (v) => (v === 'None' || v === '' ? undefined : ipAddress(v));
/** `metav1.Time`: RFC 3339 in UTC or with an offset, to the second (`2024-05-01T10:00:00Z`). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const timestamp: Check = (v) =>
  typeof v === 'string' && RFC3339.test(v) && !Number.isNaN(Date.parse(v))
    ? undefined
    : `"${String(v)}" is not an RFC 3339 time (quote it, e.g. "2024-05-01T10:00:00Z")`;

/** `stringToPort` in Istio's ambient controller: a base-10 number up to 65535; anything else is skipped. */
export function isPolicyPort(s: string): boolean {
  return /^\d+$/.test(s) && Number(s) <= 65535;
}
/** `stringToIP` in Istio's ambient controller: an address or a prefix; anything else is skipped. */
export function isPolicyIp(s: string): boolean {
  const [ip = '', len, extra] = s.split('/');
  if (extra !== undefined || net.isIP(ip) === 0) return false;
  if (len === undefined) return true;
  return /^\d+$/.test(len) && Number(len) <= (net.isIPv4(ip) ? 32 : 128);
}
const policyPort: Check = (v) =>
  typeof v === 'string' && isPolicyPort(v) ? undefined : `"${String(v)}" is not a port; Istio skips it`;
const policyIp: Check = (v) =>
  typeof v === 'string' && isPolicyIp(v) ? undefined : `"${String(v)}" is not an IP address or CIDR; Istio skips it`;

const str: Schema = { t: 'string' };
const strs: Schema = { t: 'list', of: str };
const labels: Schema = { t: 'map', of: { t: 'string', check: labelValue }, key: labelKey };
const annotations: Schema = { t: 'map', of: str };
const selector: Schema = { t: 'object', fields: { matchLabels: labels } };
const obj = (fields: Record<string, Schema>, required?: readonly string[]): Schema => ({
  t: 'object',
  fields,
  ...(required === undefined ? {} : { required }),
});
const open = (fields: Record<string, Schema>): Schema => ({ t: 'object', fields, open: true });
const any: Schema = { t: 'any' };

const METADATA: Record<string, Schema> = {
  name: str,
  namespace: { t: 'string', check: dns1123Label },
  labels,
  annotations,
  uid: str,
  generateName: str,
  // The API requires apiVersion, kind and name (uid is looked up by name when applied).
  ownerReferences: {
    t: 'list',
    of: {
      t: 'object',
      fields: {
        apiVersion: str,
        kind: str,
        name: str,
        uid: str,
        controller: { t: 'bool' },
        blockOwnerDeletion: { t: 'bool' },
      },
      required: ['apiVersion', 'kind', 'name'],
      open: true,
    },
  },
  creationTimestamp: { t: 'string', check: timestamp },
  resourceVersion: str,
  generation: { t: 'int' },
  finalizers: strs,
  managedFields: any,
  deletionTimestamp: any,
  deletionGracePeriodSeconds: { t: 'int' },
};

const policyPorts: Schema = { t: 'list', of: { t: 'string', warn: policyPort } };
const policyIps: Schema = { t: 'list', of: { t: 'string', warn: policyIp } };
const AUTHORIZATION_POLICY = obj({
  selector,
  targetRef: any,
  targetRefs: { t: 'list', of: any },
  action: { t: 'string', enum: ['ALLOW', 'DENY', 'AUDIT', 'CUSTOM'] },
  provider: obj({ name: str }),
  rules: {
    t: 'list',
    of: obj({
      from: {
        t: 'list',
        of: obj({
          source: obj({
            principals: strs,
            notPrincipals: strs,
            requestPrincipals: strs,
            notRequestPrincipals: strs,
            namespaces: strs,
            notNamespaces: strs,
            ipBlocks: policyIps,
            notIpBlocks: policyIps,
            remoteIpBlocks: policyIps,
            notRemoteIpBlocks: policyIps,
            serviceAccounts: strs,
            notServiceAccounts: strs,
          }),
        }),
      },
      to: {
        t: 'list',
        of: obj({
          operation: obj({
            hosts: strs,
            notHosts: strs,
            ports: policyPorts,
            notPorts: policyPorts,
            methods: strs,
            notMethods: strs,
            paths: strs,
            notPaths: strs,
          }),
        }),
      },
      when: { t: 'list', of: obj({ key: str, values: strs, notValues: strs }, ['key']) },
    }),
  },
});

const MTLS_MODE: Schema = { t: 'string', enum: ['UNSET', 'DISABLE', 'PERMISSIVE', 'STRICT'] };
const PEER_AUTHENTICATION = obj({
  selector,
  mtls: obj({ mode: MTLS_MODE }),
  portLevelMtls: { t: 'map', of: obj({ mode: MTLS_MODE }), key: (k) => portNumber(Number(k)) },
});

const containerPort = open({
  name: str,
  containerPort: { t: 'int', warn: portNumber },
  protocol: str,
  hostPort: { t: 'int' },
  hostIP: str,
});
const POD_SPEC = open({
  serviceAccountName: str,
  serviceAccount: str,
  nodeName: str,
  hostNetwork: { t: 'bool' },
  containers: { t: 'list', of: open({ name: str, ports: { t: 'list', of: containerPort } }) },
});
const POD_STATUS = open({
  phase: str,
  podIP: { t: 'string', warn: ipAddress },
  podIPs: { t: 'list', of: open({ ip: { t: 'string', warn: ipAddress } }) },
  conditions: { t: 'list', of: open({ type: str, status: str }) },
});

const SERVICE_SPEC = open({
  selector: labels,
  type: str,
  clusterIP: { t: 'string', warn: clusterIp },
  clusterIPs: { t: 'list', of: { t: 'string', warn: clusterIp } },
  ports: {
    t: 'list',
    of: open({
      name: str,
      port: { t: 'int', warn: portNumber },
      targetPort: { t: 'intOrString', warn: anyPort },
      protocol: str,
      appProtocol: str,
      nodePort: { t: 'int' },
    }),
  },
  publishNotReadyAddresses: { t: 'bool' },
  internalTrafficPolicy: str,
  trafficDistribution: str,
  ipFamilies: strs,
  externalName: str,
});

const WORKLOAD_ENTRY_FIELDS: Record<string, Schema> = {
  address: str,
  ports: { t: 'map', of: { t: 'int', warn: portNumber } },
  labels,
  network: str,
  locality: str,
  weight: { t: 'int' },
  serviceAccount: str,
};
const SERVICE_ENTRY = obj({
  hosts: strs,
  addresses: { t: 'list', of: { t: 'string', warn: policyIp } },
  exportTo: strs,
  subjectAltNames: strs,
  ports: {
    t: 'list',
    of: obj({
      number: { t: 'int', warn: portNumber },
      protocol: str,
      name: str,
      targetPort: { t: 'int', warn: portNumber },
    }),
  },
  location: { t: 'string', enum: ['MESH_EXTERNAL', 'MESH_INTERNAL'] },
  resolution: { t: 'string', enum: ['NONE', 'STATIC', 'DNS', 'DNS_ROUND_ROBIN', 'DYNAMIC_DNS'] },
  endpoints: { t: 'list', of: obj(WORKLOAD_ENTRY_FIELDS) },
  workloadSelector: obj({ labels }),
});

/** What amesh validates per kind: `spec`/`status` schemas, whether the name must be a DNS-1123 label, and scope. */
interface KindSchema {
  readonly spec?: Schema;
  readonly status?: Schema;
  readonly nameIsLabel?: boolean;
  /** Cluster-scoped objects have no namespace (their key's namespace is empty). */
  readonly clusterScoped?: boolean;
}

/** Kinds amesh reads, or (workload owners) accepts for their metadata. Anything else gets a warning. */
const KINDS: Readonly<Record<string, KindSchema>> = {
  Namespace: { nameIsLabel: true, clusterScoped: true },
  /** Read for its `topology.*` labels, the locality of the pods scheduled on it. */
  Node: { clusterScoped: true },
  ServiceAccount: {},
  Pod: { spec: POD_SPEC, status: POD_STATUS },
  Service: { spec: SERVICE_SPEC, nameIsLabel: true },
  ServiceEntry: { spec: SERVICE_ENTRY },
  WorkloadEntry: { spec: obj(WORKLOAD_ENTRY_FIELDS) },
  AuthorizationPolicy: { spec: AUTHORIZATION_POLICY },
  PeerAuthentication: { spec: PEER_AUTHENTICATION },
  Deployment: {},
  ReplicaSet: {},
  StatefulSet: {},
  DaemonSet: {},
  Job: {},
  CronJob: {},
};

/** What amesh checks of `kind` (an own key of `KINDS`, never one of `Object.prototype`'s); undefined for a kind it does not read. */
export function kindSchema(kind: string): KindSchema | undefined {
  return Object.hasOwn(KINDS, kind) ? KINDS[kind] : undefined;
}

export interface Problem {
  readonly line: number;
  readonly path: string;
  readonly reason: string;
}

type ScalarType = 'string' | 'int' | 'bool' | 'intOrString';

const WANT: Readonly<Record<ScalarType, string>> = {
  string: 'a string',
  int: 'an integer',
  bool: 'true or false',
  intOrString: 'an integer or a string',
};

function fitsScalar(t: ScalarType, v: unknown): boolean {
  switch (t) {
    case 'string':
      return typeof v === 'string';
    case 'bool':
      return typeof v === 'boolean';
    case 'int':
      return Number.isInteger(v);
    case 'intOrString':
      return typeof v === 'string' || Number.isInteger(v);
  }
}

/** A node that is not what the schema wants, as a message names it: a scalar by its value, else by its shape. */
function shapeOf(n: Node): string {
  if (isScalar(n)) return JSON.stringify(n.value);
  return isSeq(n) ? 'a list' : 'a mapping';
}

/** No node, or an explicit null (`key:`, `key: ~`). */
const isNullNode = (n: Node | null | undefined): n is Scalar<null> | null | undefined =>
  n === null || n === undefined || (isScalar(n) && n.value === null);

/** Walks `node` against `schema`; type problems go to `errors`, unusable values to `warnings`. */
export class SchemaWalker {
  readonly errors: Problem[] = [];
  readonly warnings: Problem[] = [];

  constructor(private readonly lines: Pick<LineCounter, 'linePos'>) {}

  line(n: Node | null | undefined): number {
    const r = n?.range;
    return r === undefined || r === null ? 1 : this.lines.linePos(r[0]).line;
  }

  private err(n: Node | null | undefined, path: string, reason: string): void {
    this.errors.push({ line: this.line(n), path, reason });
  }

  walk(n: Node | null | undefined, s: Schema, path: string): void {
    if (isNullNode(n) || s.t === 'any') return;
    switch (s.t) {
      case 'string':
      case 'int':
      case 'bool':
      case 'intOrString': {
        const v = isScalar(n) ? n.value : undefined;
        if (!fitsScalar(s.t, v))
          return this.err(
            n,
            path,
            `expected ${WANT[s.t]}, got ${shapeOf(n)}${s.t === 'string' && isScalar(n) ? ' (quote it)' : ''}`,
          );
        if (s.t === 'string' && s.enum !== undefined && !s.enum.includes(v as string))
          return this.err(n, path, `expected one of ${s.enum.join(', ')}, got "${String(v)}"`);
        const bad = s.t === 'string' ? s.check?.(v) : undefined;
        if (bad !== undefined) return this.err(n, path, bad);
        const warn = 'warn' in s ? s.warn?.(v) : undefined;
        if (warn !== undefined) this.warnings.push({ line: this.line(n), path, reason: warn });
        return;
      }
      case 'list':
        if (!isSeq(n)) return this.err(n, path, `expected a list, got ${isMap(n) ? 'a mapping' : 'a scalar'}`);
        n.items.forEach((x, i) => this.walk(x as Node, s.of, `${path}[${i}]`));
        return;
      case 'object':
      case 'map': {
        if (!isMap(n)) return this.err(n, path, `expected a mapping, got ${isSeq(n) ? 'a list' : 'a scalar'}`);
        /** Keys with a value: a required field given as null is as missing as the API server finds it. */
        const present = new Set<string>();
        for (const pair of n.items) {
          const k = pair.key as Node | null;
          const key = isScalar(k) ? String(k.value) : '';
          const p = path === '' ? key : `${path}.${key}`;
          const v = pair.value as Node | null;
          if (!isNullNode(v)) present.add(key);
          if (s.t === 'map') {
            const bad = s.key?.(key);
            if (bad !== undefined) this.err(k, p, bad);
            // A map's values are never null (a label `app:` with no value would be a selector matching nothing).
            if (isNullNode(v)) this.err(v ?? k, p, 'has no value (write "" for an empty string)');
            else this.walk(v, s.of, p);
          } else if (Object.hasOwn(s.fields, key)) this.walk(v, s.fields[key]!, p);
          else if (s.open !== true)
            this.err(k, p, `unknown field "${key}" (expected one of: ${Object.keys(s.fields).join(', ')})`);
        }
        if (s.t === 'object')
          for (const r of s.required ?? [])
            if (!present.has(r)) this.err(n, path === '' ? r : `${path}.${r}`, 'is required');
        return;
      }
    }
  }
}

/** The top level of any manifest: kubectl rejects unknown top-level and metadata fields. */
export function documentSchema(kind: KindSchema | undefined): Schema {
  const name: Schema = { t: 'string', check: kind?.nameIsLabel === true ? dns1123Label : dns1123Subdomain };
  return {
    t: 'object',
    fields: {
      apiVersion: str,
      kind: str,
      metadata: obj({ ...METADATA, name }, ['name']),
      spec: kind?.spec ?? any,
      status: kind?.status ?? any,
      data: any,
      stringData: any,
      binaryData: any,
      type: any,
      immutable: any,
    },
    required: ['apiVersion', 'kind', 'metadata'],
  };
}

/**
 * The lists of a DENY AuthorizationPolicy whose every value Istio would skip (`ports: ["80a"]`, `notPorts: ["22a"]`):
 * skipping them leaves a rule (or a Match, which ztunnel then skips) that denies nothing, which is never what its
 * author meant, so such a policy is refused instead, as Istio's validation refuses any invalid port or IP.
 * Paths are into the document, e.g. `["spec", "rules", 0, "to", 0, "operation", "ports"]`.
 */
export function denyListsWithNothingValid(spec: Record<string, unknown>): (string | number)[][] {
  if (spec['action'] !== 'DENY' || !Array.isArray(spec['rules'])) return [];
  const out: (string | number)[][] = [];
  const empty = (v: unknown, ok: (s: string) => boolean): boolean =>
    Array.isArray(v) && v.length > 0 && !v.some((x) => typeof x === 'string' && ok(x));
  (spec['rules'] as unknown[]).forEach((rule, i) => {
    const r = (rule ?? {}) as Record<string, unknown>;
    const each = (k: string, f: (x: Record<string, unknown>, j: number) => void): void => {
      if (Array.isArray(r[k])) (r[k] as unknown[]).forEach((x, j) => f((x ?? {}) as Record<string, unknown>, j));
    };
    each('to', (t, j) => {
      const op = (t['operation'] ?? {}) as Record<string, unknown>;
      for (const k of ['ports', 'notPorts'])
        if (empty(op[k], isPolicyPort)) out.push(['spec', 'rules', i, 'to', j, 'operation', k]);
    });
    each('from', (f, j) => {
      const src = (f['source'] ?? {}) as Record<string, unknown>;
      for (const k of ['ipBlocks', 'notIpBlocks'])
        if (empty(src[k], isPolicyIp)) out.push(['spec', 'rules', i, 'from', j, 'source', k]);
    });
    each('when', (w, j) => {
      const ok = conditionValueCheck(w['key']);
      if (ok !== undefined)
        for (const k of ['values', 'notValues']) if (empty(w[k], ok)) out.push(['spec', 'rules', i, 'when', j, k]);
    });
  });
  return out;
}

/** How Istio reads the values of a `when` condition on `key`, for the keys whose values it parses. */
function conditionValueCheck(key: unknown): ((s: string) => boolean) | undefined {
  if (key === 'destination.port') return isPolicyPort;
  if (key === 'source.ip' || key === 'destination.ip') return isPolicyIp;
  return undefined;
}
