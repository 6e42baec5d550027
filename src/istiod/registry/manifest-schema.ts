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
 *
 * The schemas are values whose literal types are kept (`as const satisfies Schema`, or the helpers' `const` type
 * parameters), and `Infer<S>` reads the TypeScript type of what a schema accepts off the schema itself: the typed
 * specs the model reads (`SpecOf`, `StatusOf`) cannot drift from what is checked. The walker lets `null` through
 * wherever a field is optional and as a list item (the model reads a null `targetRef` or `hosts` as set, so null
 * is kept rather than read as absent), so the types say `| null` there; a required field must not be null.
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
      readonly fields: Fields;
      readonly required?: readonly string[];
      readonly open?: boolean;
    }
  | { readonly t: 'map'; readonly of: Schema; readonly key?: Check }
  | { readonly t: 'any' };

type Fields = Readonly<Record<string, Schema>>;

/** The type of a value `S` accepts (not null): an enum's strings, lists, objects with their required fields. */
export type Infer<S extends Schema> = {
  string: S extends { readonly enum: readonly (infer E extends string)[] } ? E : string;
  int: number;
  bool: boolean;
  intOrString: number | string;
  list: S extends { readonly of: infer O extends Schema } ? readonly (Infer<O> | null)[] : never;
  map: S extends { readonly of: infer O extends Schema } ? Readonly<Record<string, Infer<O>>> : never;
  object: S extends { readonly fields: infer F extends Fields } ? InferObject<F, RequiredOf<S>> : never;
  any: unknown;
}[S['t']];

type RequiredOf<S> = S extends { readonly required?: readonly (infer R extends string)[] } ? R : never;

/** Required fields are present and not null; any other field may be absent or null. */
type InferObject<F extends Fields, R extends string> = Flat<
  { readonly [K in keyof F & R]: Infer<F[K]> } & { readonly [K in Exclude<keyof F, R>]?: Infer<F[K]> | null }
>;
type Flat<T> = { [K in keyof T]: T[K] } & {};

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

const str = { t: 'string' } as const satisfies Schema;
const int = { t: 'int' } as const satisfies Schema;
const bool = { t: 'bool' } as const satisfies Schema;
const any = { t: 'any' } as const satisfies Schema;
const port = { t: 'int', warn: portNumber } as const satisfies Schema;

function list<const S extends Schema>(of: S): { readonly t: 'list'; readonly of: S } {
  return { t: 'list', of };
}
function map<const S extends Schema>(of: S, key?: Check): { readonly t: 'map'; readonly of: S; readonly key?: Check } {
  return key === undefined ? { t: 'map', of } : { t: 'map', of, key };
}
/** An object with only the fields in `fields`. */
function obj<const F extends Fields>(fields: F): { readonly t: 'object'; readonly fields: F } {
  return { t: 'object', fields };
}
/** An object of a built-in kind: fields amesh does not read are let through. */
function open<const F extends Fields>(fields: F): { readonly t: 'object'; readonly fields: F; readonly open: true } {
  return { t: 'object', fields, open: true };
}
/** `s` with the fields in `required` present and not null. */
function requiring<
  const S extends { readonly t: 'object'; readonly fields: Fields },
  const R extends readonly (keyof S['fields'] & string)[],
>(s: S, required: R): S & { readonly required: R } {
  return { ...s, required };
}

const strs = list(str);
const labels = map({ t: 'string', check: labelValue }, labelKey);
const selector = obj({ matchLabels: labels });

const OWNER_REFERENCE = requiring(
  open({ apiVersion: str, kind: str, name: str, uid: str, controller: bool, blockOwnerDeletion: bool }),
  ['apiVersion', 'kind', 'name'],
);
/** `ownerReferences[]`: the API requires apiVersion, kind and name (uid is looked up by name when applied). */
export type OwnerReference = Infer<typeof OWNER_REFERENCE>;

const METADATA = {
  name: str,
  namespace: { t: 'string', check: dns1123Label },
  labels,
  annotations: map(str),
  uid: str,
  generateName: str,
  ownerReferences: list(OWNER_REFERENCE),
  creationTimestamp: { t: 'string', check: timestamp },
  resourceVersion: str,
  generation: int,
  finalizers: strs,
  managedFields: any,
  deletionTimestamp: { t: 'string', check: timestamp },
  deletionGracePeriodSeconds: int,
} as const satisfies Fields;

const policyPorts = list({ t: 'string', warn: policyPort });
const policyIps = list({ t: 'string', warn: policyIp });
const SOURCE = obj({
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
});
const OPERATION = obj({
  hosts: strs,
  notHosts: strs,
  ports: policyPorts,
  notPorts: policyPorts,
  methods: strs,
  notMethods: strs,
  paths: strs,
  notPaths: strs,
});
const CONDITION = requiring(obj({ key: str, values: strs, notValues: strs }), ['key']);
const RULE = obj({
  from: list(obj({ source: SOURCE })),
  to: list(obj({ operation: OPERATION })),
  when: list(CONDITION),
});
const AUTHORIZATION_POLICY = obj({
  selector,
  targetRef: any,
  targetRefs: list(any),
  action: { t: 'string', enum: ['ALLOW', 'DENY', 'AUDIT', 'CUSTOM'] },
  provider: obj({ name: str }),
  rules: list(RULE),
});
/** `source` of an AuthorizationPolicy rule's `from`. */
export type PolicySource = Infer<typeof SOURCE>;
/** `operation` of an AuthorizationPolicy rule's `to`. */
export type PolicyOperation = Infer<typeof OPERATION>;
/** One entry of an AuthorizationPolicy rule's `when`. */
export type PolicyCondition = Infer<typeof CONDITION>;
export type PolicyRule = Infer<typeof RULE>;

/** A RequestAuthentication (security.istio.io/v1): the JWTs a waypoint checks, per issuer. */
const REQUEST_AUTHENTICATION = obj({
  selector,
  targetRef: any,
  targetRefs: list(any),
  jwtRules: list(
    open({
      issuer: str,
      audiences: strs,
      jwksUri: str,
      jwks: str,
      fromHeaders: list(open({ name: str, prefix: str })),
      fromParams: strs,
      fromCookies: strs,
      outputPayloadToHeader: str,
      forwardOriginalToken: bool,
      outputClaimToHeaders: list(open({ header: str, claim: str })),
    }),
  ),
});
export type JwtRuleSpec = NonNullable<NonNullable<Infer<typeof REQUEST_AUTHENTICATION>['jwtRules']>[number]>;

const MTLS_MODE = { t: 'string', enum: ['UNSET', 'DISABLE', 'PERMISSIVE', 'STRICT'] } as const satisfies Schema;
export type MtlsMode = Infer<typeof MTLS_MODE>;
const PEER_AUTHENTICATION = obj({
  selector,
  mtls: obj({ mode: MTLS_MODE }),
  portLevelMtls: map(obj({ mode: MTLS_MODE }), (k) => portNumber(Number(k))),
});

const POD_SPEC = open({
  serviceAccountName: str,
  serviceAccount: str,
  nodeName: str,
  hostNetwork: bool,
  containers: list(
    open({
      name: str,
      ports: list(open({ name: str, containerPort: port, protocol: str, hostPort: int, hostIP: str })),
    }),
  ),
});
const POD_STATUS = open({
  phase: str,
  podIP: { t: 'string', warn: ipAddress },
  podIPs: list(open({ ip: { t: 'string', warn: ipAddress } })),
  conditions: list(open({ type: str, status: str })),
});

const SERVICE_SPEC = open({
  selector: labels,
  type: str,
  clusterIP: { t: 'string', warn: clusterIp },
  clusterIPs: list({ t: 'string', warn: clusterIp }),
  ports: list(
    open({
      name: str,
      port,
      targetPort: { t: 'intOrString', warn: anyPort },
      protocol: str,
      appProtocol: str,
      nodePort: int,
    }),
  ),
  publishNotReadyAddresses: bool,
  internalTrafficPolicy: str,
  trafficDistribution: str,
  ipFamilies: strs,
  externalName: str,
});

const ENDPOINT_SLICE = obj({
  addressType: { t: 'string', enum: ['IPv4', 'IPv6', 'FQDN'] },
  endpoints: list(
    open({
      addresses: strs,
      conditions: open({ ready: bool, serving: bool, terminating: bool }),
      targetRef: open({ kind: str, namespace: str, name: str, uid: str }),
      nodeName: str,
      zone: str,
      hostname: str,
    }),
  ),
  ports: list(open({ name: str, port: int, protocol: str, appProtocol: str })),
});

const WORKLOAD_ENTRY = obj({
  address: str,
  ports: map(port),
  labels,
  network: str,
  locality: str,
  weight: int,
  serviceAccount: str,
});
/** A WorkloadEntry's spec, and a ServiceEntry's endpoint. */
export type WorkloadEntrySpec = Infer<typeof WORKLOAD_ENTRY>;
const SERVICE_ENTRY = obj({
  hosts: strs,
  addresses: list({ t: 'string', warn: policyIp }),
  exportTo: strs,
  subjectAltNames: strs,
  ports: list(obj({ number: port, protocol: str, name: str, targetPort: port })),
  location: { t: 'string', enum: ['MESH_EXTERNAL', 'MESH_INTERNAL'] },
  resolution: { t: 'string', enum: ['NONE', 'STATIC', 'DNS', 'DNS_ROUND_ROBIN', 'DYNAMIC_DNS'] },
  endpoints: list(WORKLOAD_ENTRY),
  workloadSelector: obj({ labels }),
});
/**
 * A ServiceEntry's status as istiod reads it: the addresses istiod allocated, one or two (IPv4, IPv6) per host
 * (istio.io/api `networking/v1alpha3/service_entry.proto` ServiceEntryStatus, ServiceEntryAddress). Conditions and
 * validation messages are let through unread.
 */
const SERVICE_ENTRY_STATUS = open({ addresses: list(open({ value: str, host: str })) });

/** A label selector with expressions, as a Gateway listener's `allowedRoutes.namespaces.selector` takes one. */
const LABEL_SELECTOR = obj({
  matchLabels: labels,
  matchExpressions: list(
    requiring(
      open({ key: str, operator: { t: 'string', enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] }, values: strs }),
      ['key', 'operator'],
    ),
  ),
});
/**
 * A Gateway API Gateway as istiod reads it for waypoints and ingress gateways (gateway.networking.k8s.io/v1
 * `Gateway`): its class, its listeners' ports, protocols, hostnames, TLS and which routes may attach; the rest is let
 * through unread.
 */
const GATEWAY_SPEC = requiring(
  open({
    gatewayClassName: str,
    listeners: list(
      open({
        name: str,
        port,
        protocol: str,
        hostname: str,
        tls: open({
          mode: str,
          certificateRefs: list(open({ group: str, kind: str, name: str, namespace: str })),
          options: map(str),
        }),
        allowedRoutes: open({
          namespaces: open({
            from: { t: 'string', enum: ['All', 'Same', 'Selector', 'None'] },
            selector: LABEL_SELECTOR,
          }),
          kinds: list(open({ group: str, kind: str })),
        }),
      }),
    ),
    addresses: list(open({ type: str, value: str })),
  }),
  ['gatewayClassName'],
);
/** An Istio StringMatch (networking/v1alpha3 `StringMatch`): one of exact, prefix, regex. */
const ISTIO_STRING_MATCH = open({ exact: str, prefix: str, regex: str });
const ISTIO_HEADER_OPS = open({ set: map(str), add: map(str), remove: strs });
/**
 * Istio's own Gateway (networking.istio.io `Gateway`) as istiod reads it for ingress gateways: the proxies it
 * selects by label, and its servers' ports, hosts and TLS.
 */
const ISTIO_GATEWAY_SPEC = open({
  selector: map(str),
  servers: list(
    open({
      port: open({ number: port, name: str, protocol: str }),
      hosts: strs,
      tls: open({
        mode: str,
        credentialName: str,
        httpsRedirect: bool,
        subjectAltNames: strs,
        verifyCertificateHash: strs,
        verifyCertificateSpki: strs,
      }),
      name: str,
    }),
  ),
});
/** Where an Istio route sends requests (networking/v1alpha3 `Destination`). */
const ISTIO_DESTINATION = open({ host: str, subset: str, port: open({ number: int }) });
/** A `tls` or `tcp` route's destinations (networking/v1alpha3 `RouteDestination`). */
const ISTIO_L4_ROUTE = list(open({ destination: ISTIO_DESTINATION, weight: int }));
/** Istio's VirtualService (networking.istio.io) as istiod reads it for the HTTP routes of gateways it names. */
const VIRTUAL_SERVICE_SPEC = open({
  hosts: strs,
  gateways: strs,
  http: list(
    open({
      name: str,
      match: list(
        open({
          uri: ISTIO_STRING_MATCH,
          method: ISTIO_STRING_MATCH,
          headers: map(ISTIO_STRING_MATCH),
          queryParams: map(ISTIO_STRING_MATCH),
          port: int,
          gateways: strs,
        }),
      ),
      route: list(
        open({
          destination: ISTIO_DESTINATION,
          weight: int,
          headers: open({ request: ISTIO_HEADER_OPS, response: ISTIO_HEADER_OPS }),
        }),
      ),
      mirror: ISTIO_DESTINATION,
      mirrorPercentage: open({ value: any }),
      mirrorPercent: int,
      mirrors: list(open({ destination: ISTIO_DESTINATION, percentage: open({ value: any }) })),
      redirect: open({ uri: str, authority: str, port: int, scheme: str, redirectCode: int }),
      directResponse: open({ status: int }),
      rewrite: open({ uri: str, authority: str }),
      timeout: str,
      headers: open({ request: ISTIO_HEADER_OPS, response: ISTIO_HEADER_OPS }),
      retries: open({ attempts: int, retryOn: str, perTryTimeout: str }),
      fault: open({
        delay: open({ fixedDelay: str, percentage: open({ value: any }) }),
        abort: open({ httpStatus: int, percentage: open({ value: any }) }),
      }),
    }),
  ),
  tls: list(
    open({
      match: list(open({ sniHosts: strs, port: int, gateways: strs })),
      route: ISTIO_L4_ROUTE,
    }),
  ),
  tcp: list(open({ match: list(open({ port: int, gateways: strs })), route: ISTIO_L4_ROUTE })),
});
export type VirtualServiceSpec = Infer<typeof VIRTUAL_SERVICE_SPEC>;
/** Istio's DestinationRule (networking.istio.io) as istiod reads it for the subsets VirtualServices route to. */
const DESTINATION_RULE_SPEC = open({
  host: str,
  subsets: list(open({ name: str, labels: map(str) })),
  trafficPolicy: any,
  workloadSelector: open({ matchLabels: map(str) }),
});
/** A ReferenceGrant (gateway.networking.k8s.io/v1beta1): who may refer to what in its namespace. */
const REFERENCE_GRANT_SPEC = open({
  from: list(open({ group: str, kind: str, namespace: str })),
  to: list(open({ group: str, kind: str, name: str })),
});
/** The addresses the Gateway's controller published (`status.addresses`): a waypoint is known by them. */
const GATEWAY_STATUS = open({ addresses: list(open({ type: str, value: str })) });

/** A Gateway API object reference (`parentRefs`, `backendRefs`, `targetRefs`); the API server checked its shape. */
const OBJECT_REF = open({ group: str, kind: str, name: str, namespace: str, sectionName: str, port: int, weight: int });
const HEADER_LIST = list(open({ name: str, value: str }));
const HEADER_FILTER = open({ set: HEADER_LIST, add: HEADER_LIST, remove: strs });
const PATH_MODIFIER = open({ type: str, replaceFullPath: str, replacePrefixMatch: str });
/** A RequestMirror filter: the backend, and the share of requests (`percent`, or `fraction` of `denominator`). */
const REQUEST_MIRROR = open({
  backendRef: OBJECT_REF,
  percent: int,
  fraction: open({ numerator: int, denominator: int }),
});
/** A `filters` entry of an HTTPRoute rule or backendRef. */
const HTTP_ROUTE_FILTER = open({
  type: str,
  requestHeaderModifier: HEADER_FILTER,
  responseHeaderModifier: HEADER_FILTER,
  requestRedirect: open({ scheme: str, hostname: str, path: PATH_MODIFIER, port: int, statusCode: int }),
  urlRewrite: open({ hostname: str, path: PATH_MODIFIER }),
  requestMirror: REQUEST_MIRROR,
});
/** A Gateway API HTTPRoute (gateway.networking.k8s.io/v1) as istiod reads it for the waypoint's routes. */
const HTTP_ROUTE_SPEC = open({
  parentRefs: list(OBJECT_REF),
  hostnames: strs,
  rules: list(
    open({
      name: str,
      matches: list(
        open({
          path: open({ type: str, value: str }),
          headers: list(open({ type: str, name: str, value: str })),
          queryParams: list(open({ type: str, name: str, value: str })),
          method: str,
        }),
      ),
      filters: list(HTTP_ROUTE_FILTER),
      backendRefs: list(OBJECT_REF),
      timeouts: open({ request: str, backendRequest: str }),
    }),
  ),
});
export type HttpRouteSpec = Infer<typeof HTTP_ROUTE_SPEC>;
/** A `filters` entry of a GRPCRoute rule or backendRef. */
const GRPC_ROUTE_FILTER = open({
  type: str,
  requestHeaderModifier: HEADER_FILTER,
  responseHeaderModifier: HEADER_FILTER,
  requestMirror: REQUEST_MIRROR,
});
/**
 * A Gateway API GRPCRoute (gateway.networking.k8s.io/v1) as istiod reads it for the waypoint's routes: matches by
 * gRPC service and method and by headers; backendRefs are read with their `filters`, which the waypoint cannot apply.
 */
const GRPC_ROUTE_SPEC = open({
  parentRefs: list(OBJECT_REF),
  hostnames: strs,
  rules: list(
    open({
      name: str,
      matches: list(
        open({
          method: open({ type: str, service: str, method: str }),
          headers: list(open({ type: str, name: str, value: str })),
        }),
      ),
      filters: list(GRPC_ROUTE_FILTER),
      backendRefs: list(
        open({
          group: str,
          kind: str,
          name: str,
          namespace: str,
          port: int,
          weight: int,
          filters: list(GRPC_ROUTE_FILTER),
        }),
      ),
    }),
  ),
});
export type GrpcRouteSpec = Infer<typeof GRPC_ROUTE_SPEC>;
/** A Gateway API TLSRoute or TCPRoute (gateway.networking.k8s.io/v1): where an ingress gateway relays connections. */
const L4_ROUTE_SPEC = open({
  parentRefs: list(OBJECT_REF),
  hostnames: strs,
  rules: list(open({ name: str, backendRefs: list(OBJECT_REF) })),
});

/** What amesh validates per kind: `spec`/`status` schemas, whether the name must be a DNS-1123 label, and scope. */
interface KindSchema {
  readonly spec?: Schema;
  readonly status?: Schema;
  readonly nameIsLabel?: boolean;
  /**
   * The kind has no `spec`: the fields of the `spec` schema sit at the document's top level (EndpointSlice's
   * `addressType`, `endpoints`, `ports`), and the checked object holds them as its `spec`.
   */
  readonly topLevel?: boolean;
  /** Cluster-scoped objects have no namespace (their key's namespace is empty). */
  readonly clusterScoped?: boolean;
}

/** Kinds amesh reads, or (workload owners) accepts for their metadata. Anything else gets a warning. */
const KINDS = {
  Namespace: { nameIsLabel: true, clusterScoped: true },
  /** Read for its `topology.*` labels, the locality of the pods scheduled on it. */
  Node: { clusterScoped: true },
  ServiceAccount: {},
  Pod: { spec: POD_SPEC, status: POD_STATUS },
  Service: { spec: SERVICE_SPEC, nameIsLabel: true },
  /** Read for the backends of Services without a selector (`default/kubernetes`), as Istio's ambient index is. */
  EndpointSlice: { spec: ENDPOINT_SLICE, topLevel: true },
  ServiceEntry: { spec: SERVICE_ENTRY, status: SERVICE_ENTRY_STATUS },
  WorkloadEntry: { spec: WORKLOAD_ENTRY },
  AuthorizationPolicy: { spec: AUTHORIZATION_POLICY },
  PeerAuthentication: { spec: PEER_AUTHENTICATION },
  /** Read for istiod's mesh config (the `istio` ConfigMap's `mesh`): its extension providers. */
  ConfigMap: { spec: open({ data: map(str) }), topLevel: true },
  /** Read for the JWT rules of waypoints (targetRefs). */
  RequestAuthentication: { spec: REQUEST_AUTHENTICATION },
  /** Read for waypoints (class, listeners, published addresses, `istio.io/waypoint-for`). */
  Gateway: { spec: GATEWAY_SPEC, status: GATEWAY_STATUS },
  /** Read for its `istio.io/waypoint-for` label, the traffic its waypoints take by default. */
  GatewayClass: { clusterScoped: true },
  /** Read for the routes of the Services behind waypoints (parentRefs to a Service). */
  HTTPRoute: { spec: HTTP_ROUTE_SPEC },
  /** Read as HTTPRoutes are, into the same per-Service routes. */
  GRPCRoute: { spec: GRPC_ROUTE_SPEC },
  /** Read for the connections an ingress gateway's TLS passthrough listeners relay, by SNI. */
  TLSRoute: { spec: L4_ROUTE_SPEC },
  /** Read for the connections an ingress gateway's TCP listeners relay. */
  TCPRoute: { spec: L4_ROUTE_SPEC },
  /** Read for the references it lets Gateways and routes make into its namespace (certificates, backends). */
  ReferenceGrant: { spec: REFERENCE_GRANT_SPEC },
  /**
   * Istio's own Gateway (networking.istio.io), read under this name so as not to be taken for the Gateway API's:
   * its servers become listeners of the gateways it selects.
   */
  IstioGateway: { spec: ISTIO_GATEWAY_SPEC },
  /** Read for the HTTP routes of the Istio Gateways it names, and of the Services it names at their waypoints. */
  VirtualService: { spec: VIRTUAL_SERVICE_SPEC },
  /** Read for the subsets VirtualServices route to. */
  DestinationRule: { spec: DESTINATION_RULE_SPEC },
  Deployment: {},
  ReplicaSet: {},
  StatefulSet: {},
  DaemonSet: {},
  Job: {},
  CronJob: {},
} as const satisfies Readonly<Record<string, KindSchema>>;

/** A kind amesh reads (or accepts for its metadata). */
export type ResourceKind = keyof typeof KINDS;

/** `kind` has a schema here (an own key of `KINDS`, never one of `Object.prototype`'s). */
export function isResourceKind(kind: string): kind is ResourceKind {
  return Object.hasOwn(KINDS, kind);
}

/** What amesh checks of `kind`; undefined for a kind it does not read. */
export function kindSchema(kind: string): KindSchema | undefined {
  return isResourceKind(kind) ? KINDS[kind] : undefined;
}

/** A kind's `spec` (or `status`) once checked: typed by its schema; a kind without one may hold anything. */
type Section<K extends ResourceKind, P extends 'spec' | 'status'> = (typeof KINDS)[K] extends {
  readonly [Q in P]: infer S extends Schema;
}
  ? Infer<S>
  : Readonly<Record<string, unknown>>;
export type SpecOf<K extends ResourceKind> = Section<K, 'spec'>;
export type StatusOf<K extends ResourceKind> = Section<K, 'status'>;

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
function documentOf<const Spec extends Schema, const Status extends Schema>(
  nameIsLabel: boolean,
  spec: Spec,
  status: Status,
) {
  const name = { t: 'string', check: nameIsLabel ? dns1123Label : dns1123Subdomain } as const;
  return requiring(
    obj({
      apiVersion: str,
      kind: str,
      metadata: requiring(obj({ ...METADATA, name }), ['name']),
      spec,
      status,
      data: any,
      stringData: any,
      binaryData: any,
      type: any,
      immutable: any,
    }),
    ['apiVersion', 'kind', 'metadata'],
  );
}

/** What a document of `kind` (undefined: a kind amesh does not read) is checked against. */
export function documentSchema(kind: KindSchema | undefined): Schema {
  const doc = documentOf(kind?.nameIsLabel === true, kind?.spec ?? any, kind?.status ?? any);
  if (kind?.topLevel !== true || kind.spec?.t !== 'object') return doc;
  const fields = Object.fromEntries(Object.entries(doc.fields).filter(([k]) => k !== 'spec'));
  return { ...doc, fields: { ...fields, ...kind.spec.fields } };
}

/** The fields a kind without a `spec` (`topLevel`) keeps at its document's top level; none for any other kind. */
export function topLevelFields(kind: KindSchema | undefined): readonly string[] {
  return kind?.topLevel === true && kind.spec?.t === 'object' ? Object.keys(kind.spec.fields) : [];
}

/** A document `documentSchema` accepts, whatever its kind (its spec and status are typed by `SpecOf`, `StatusOf`). */
export type CheckedDocument = Infer<ReturnType<typeof documentOf<typeof any, typeof any>>>;

/**
 * The lists of a DENY AuthorizationPolicy whose every value Istio would skip (`ports: ["80a"]`, `notPorts: ["22a"]`):
 * skipping them leaves a rule (or a Match, which ztunnel then skips) that denies nothing, which is never what its
 * author meant, so such a policy is refused instead, as Istio's validation refuses any invalid port or IP.
 * Paths are into the document, e.g. `["spec", "rules", 0, "to", 0, "operation", "ports"]`.
 */
export function denyListsWithNothingValid(spec: SpecOf<'AuthorizationPolicy'>): (string | number)[][] {
  if (spec.action !== 'DENY') return [];
  const out: (string | number)[][] = [];
  const empty = (v: readonly (string | null)[] | null | undefined, ok: (s: string) => boolean): boolean =>
    Array.isArray(v) && v.length > 0 && !v.some((x) => typeof x === 'string' && ok(x));
  spec.rules?.forEach((rule, i) => {
    rule?.to?.forEach((t, j) => {
      for (const k of ['ports', 'notPorts'] as const)
        if (empty(t?.operation?.[k], isPolicyPort)) out.push(['spec', 'rules', i, 'to', j, 'operation', k]);
    });
    rule?.from?.forEach((f, j) => {
      for (const k of ['ipBlocks', 'notIpBlocks'] as const)
        if (empty(f?.source?.[k], isPolicyIp)) out.push(['spec', 'rules', i, 'from', j, 'source', k]);
    });
    rule?.when?.forEach((w, j) => {
      const ok = conditionValueCheck(w?.key);
      if (ok !== undefined)
        for (const k of ['values', 'notValues'] as const)
          if (empty(w?.[k], ok)) out.push(['spec', 'rules', i, 'when', j, k]);
    });
  });
  return out;
}

/** How Istio reads the values of a `when` condition on `key`, for the keys whose values it parses. */
function conditionValueCheck(key: string | undefined): ((s: string) => boolean) | undefined {
  if (key === 'destination.port') return isPolicyPort;
  if (key === 'source.ip' || key === 'destination.ip') return isPolicyIp;
  return undefined;
}
