/**
 * The Gateway API's GatewayClass, Gateway, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute and ReferenceGrant
 * (gateway.networking.k8s.io, standard channel) as their CRDs declare them, written from the Go types and their
 * kubebuilder markers (kubernetes-sigs/gateway-api `apis/v1/gateway_types.go`, `httproute_types.go`,
 * `grpcroute_types.go`, `tlsroute_types.go`, `tcproute_types.go`, `referencegrant_types.go`, `shared_types.go`,
 * `object_reference_types.go`): types, enums, required fields, lengths, patterns, list limits and defaults.
 *
 * Left out: the CEL rules (`x-kubernetes-validations`: listener name and hostname uniqueness, per-filter-type field
 * pairing, path match value rules, timeout ordering, a gRPC method match naming a service or a method and their
 * characters, a TLSRoute hostname that is an IP, a Service backend without a port), which this server does not
 * evaluate; they are cross-field consistency checks, none guards the server. `status` keeps unknown fields rather
 * than listing the controllers' conditions.
 */
import type { CustomResourceSource, JsonSchema } from './json-schema.js';

const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const HOSTNAME = '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const HEADER_NAME = "^[A-Za-z0-9!#$%&'*+\\-.^_\\x60|~]+$";
const DURATION = '^([0-9]{1,5}(h|m|s|ms)){1,4}$';
const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'];

function str(minLength: number | undefined, maxLength: number, pattern?: string, extra: JsonSchema = {}): JsonSchema {
  return {
    type: 'string',
    ...(minLength !== undefined ? { minLength } : {}),
    maxLength,
    ...(pattern !== undefined ? { pattern } : {}),
    ...extra,
  };
}

function obj(properties: Record<string, JsonSchema>, required?: string[], extra: JsonSchema = {}): JsonSchema {
  return { type: 'object', properties, ...(required !== undefined ? { required } : {}), ...extra };
}

function list(items: JsonSchema, maxItems: number | undefined, extra: JsonSchema = {}): JsonSchema {
  return {
    type: 'array',
    items,
    ...(maxItems !== undefined ? { maxItems } : {}),
    'x-kubernetes-list-type': 'atomic',
    ...extra,
  };
}

function mapList(items: JsonSchema, key: string, maxItems: number): JsonSchema {
  return { type: 'array', items, maxItems, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': [key] };
}

const enumOf = (values: string[], extra: JsonSchema = {}): JsonSchema => ({ type: 'string', enum: values, ...extra });
const port: JsonSchema = { type: 'integer', format: 'int32', minimum: 1, maximum: 65535 };
const int32 = (minimum: number, extra: JsonSchema = {}): JsonSchema => ({
  type: 'integer',
  format: 'int32',
  minimum,
  ...extra,
});

const group = (dflt?: string): JsonSchema =>
  str(undefined, 253, `^$|${DNS_SUBDOMAIN}`, dflt !== undefined ? { default: dflt } : {});
const kind = (dflt?: string): JsonSchema =>
  str(1, 63, '^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$', dflt !== undefined ? { default: dflt } : {});
const objectName = str(1, 253);
const namespace = str(1, 63, '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$');
const sectionName = str(1, 253, DNS_SUBDOMAIN);

/** SecretObjectReference: a Secret by default, in the referrer's namespace unless named. */
const secretReference = obj({ group: group(''), kind: kind('Secret'), name: objectName, namespace }, ['name']);
const localObjectReference = obj({ group: group(), kind: kind(), name: objectName }, ['group', 'kind', 'name']);
const objectReference = obj({ group: group(), kind: kind(), name: objectName, namespace }, ['group', 'kind', 'name']);

const labelSelector = obj({
  matchExpressions: list(
    obj({ key: { type: 'string' }, operator: { type: 'string' }, values: list({ type: 'string' }, undefined) }, [
      'key',
      'operator',
    ]),
    undefined,
  ),
  matchLabels: { type: 'object', additionalProperties: { type: 'string' } },
});

const caValidation = obj(
  {
    caCertificateRefs: list(objectReference, 16, { minItems: 1 }),
    mode: enumOf(['AllowValidOnly', 'AllowInsecureFallback'], { default: 'AllowValidOnly' }),
  },
  ['caCertificateRefs'],
);

const gatewaySpec = obj(
  {
    addresses: list(
      obj({
        type: str(
          1,
          253,
          "^Hostname|IPAddress|NamedAddress|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\\/[A-Za-z0-9\\/\\-._~%!$&'()*+,;=:]+$",
          { default: 'IPAddress' },
        ),
        value: str(undefined, 253),
      }),
      16,
    ),
    allowedListeners: obj({
      namespaces: obj(
        { from: enumOf(['All', 'Selector', 'Same', 'None'], { default: 'None' }), selector: labelSelector },
        undefined,
        { default: { from: 'None' } },
      ),
    }),
    gatewayClassName: str(1, 253),
    infrastructure: obj({
      annotations: { type: 'object', additionalProperties: str(0, 4096), maxProperties: 16 },
      labels: {
        type: 'object',
        additionalProperties: str(0, 63, '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'),
        maxProperties: 8,
      },
      parametersRef: localObjectReference,
    }),
    listeners: {
      ...mapList(
        obj(
          {
            allowedRoutes: obj(
              {
                kinds: list(obj({ group: group('gateway.networking.k8s.io'), kind: kind() }, ['kind']), 8),
                namespaces: obj(
                  { from: enumOf(['All', 'Selector', 'Same'], { default: 'Same' }), selector: labelSelector },
                  undefined,
                  { default: { from: 'Same' } },
                ),
              },
              undefined,
              { default: { namespaces: { from: 'Same' } } },
            ),
            hostname: str(1, 253, HOSTNAME),
            name: sectionName,
            port,
            protocol: str(
              1,
              255,
              '^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\\/[A-Za-z0-9]+$',
            ),
            tls: obj({
              certificateRefs: list(secretReference, 64),
              mode: enumOf(['Terminate', 'Passthrough'], { default: 'Terminate' }),
              options: { type: 'object', additionalProperties: str(0, 4096), maxProperties: 16 },
            }),
          },
          ['name', 'port', 'protocol'],
        ),
        'name',
        64,
      ),
      minItems: 1,
    },
    tls: obj({
      backend: obj({ clientCertificateRef: secretReference }),
      frontend: obj(
        {
          default: obj({ validation: caValidation }),
          perPort: mapList(obj({ port, tls: obj({ validation: caValidation }) }, ['port', 'tls']), 'port', 64),
        },
        ['default'],
      ),
    }),
  },
  ['gatewayClassName', 'listeners'],
);

const headerValue = (maxLength: number): JsonSchema =>
  obj({ name: str(1, 256, HEADER_NAME), value: str(1, maxLength) }, ['name', 'value']);
const headerModifier = obj({
  add: mapList(headerValue(4096), 'name', 16),
  remove: { type: 'array', items: { type: 'string' }, maxItems: 16, 'x-kubernetes-list-type': 'set' },
  set: mapList(headerValue(4096), 'name', 16),
});
const pathModifier = obj(
  {
    replaceFullPath: str(undefined, 1024),
    replacePrefixMatch: str(undefined, 1024),
    type: enumOf(['ReplaceFullPath', 'ReplacePrefixMatch']),
  },
  ['type'],
);
const backendObjectReference = {
  group: group(''),
  kind: kind('Service'),
  name: objectName,
  namespace,
  port,
};
const headerSet = (items: JsonSchema, maxItems: number): JsonSchema => ({
  type: 'array',
  items,
  maxItems,
  'x-kubernetes-list-type': 'set',
});

/** `HTTPRequestMirrorFilter`, which HTTPRoute and GRPCRoute filters share. */
const requestMirror = obj(
  {
    backendRef: obj(backendObjectReference, ['name']),
    fraction: obj({ denominator: int32(1, { default: 100 }), numerator: int32(0) }, ['numerator']),
    percent: int32(0, { maximum: 100 }),
  },
  ['backendRef'],
);

const httpRouteFilter = obj(
  {
    cors: obj({
      allowCredentials: { type: 'boolean' },
      allowHeaders: headerSet(str(1, 256, HEADER_NAME), 64),
      allowMethods: headerSet(enumOf([...HTTP_METHODS, '*']), 9),
      allowOrigins: headerSet(
        str(1, 253, '(^\\*$)|(^(http(s)?):\\/\\/(((\\*\\.)?([a-zA-Z0-9\\-]+\\.)*[a-zA-Z0-9-]+|\\*)(:([0-9]{1,5}))?)$)'),
        64,
      ),
      exposeHeaders: headerSet(str(1, 256, HEADER_NAME), 64),
      maxAge: int32(1, { default: 5 }),
    }),
    extensionRef: localObjectReference,
    requestHeaderModifier: headerModifier,
    requestMirror,
    requestRedirect: obj({
      hostname: str(1, 253, DNS_SUBDOMAIN),
      path: pathModifier,
      port,
      scheme: enumOf(['http', 'https']),
      statusCode: { type: 'integer', enum: [301, 302, 303, 307, 308], default: 302 },
    }),
    responseHeaderModifier: headerModifier,
    type: enumOf([
      'RequestHeaderModifier',
      'ResponseHeaderModifier',
      'RequestMirror',
      'RequestRedirect',
      'URLRewrite',
      'ExtensionRef',
      'CORS',
    ]),
    urlRewrite: obj({ hostname: str(1, 253, DNS_SUBDOMAIN), path: pathModifier }),
  },
  ['type'],
);

const matchType = enumOf(['Exact', 'RegularExpression'], { default: 'Exact' });
const PATH_PREFIX_ROOT = { type: 'PathPrefix', value: '/' };
/** A route's header matches (`HTTPHeaderMatch`, `GRPCHeaderMatch`): one per name. */
const headerMatches = mapList(obj({ ...headerValue(4096).properties, type: matchType }, ['name', 'value']), 'name', 16);
const routeHostnames = list(str(1, 253, HOSTNAME), 16);
/** `ParentReference`: a Gateway unless named otherwise (a Service for the mesh's routes). */
const parentRefs = list(
  obj(
    {
      group: group('gateway.networking.k8s.io'),
      kind: kind('Gateway'),
      name: objectName,
      namespace,
      port,
      sectionName,
    },
    ['name'],
  ),
  32,
);

const httpRouteSpec = obj({
  hostnames: routeHostnames,
  parentRefs,
  rules: list(
    obj({
      backendRefs: list(
        obj(
          {
            filters: list(httpRouteFilter, 16),
            ...backendObjectReference,
            weight: int32(0, { maximum: 1000000, default: 1 }),
          },
          ['name'],
        ),
        16,
      ),
      filters: list(httpRouteFilter, 16),
      matches: list(
        obj({
          headers: headerMatches,
          method: enumOf(HTTP_METHODS),
          path: obj(
            {
              type: enumOf(['Exact', 'PathPrefix', 'RegularExpression'], { default: 'PathPrefix' }),
              value: str(undefined, 1024, undefined, { default: '/' }),
            },
            undefined,
            { default: PATH_PREFIX_ROOT },
          ),
          queryParams: mapList(
            obj({ ...headerValue(1024).properties, type: matchType }, ['name', 'value']),
            'name',
            16,
          ),
        }),
        64,
        { default: [{ path: PATH_PREFIX_ROOT }] },
      ),
      name: sectionName,
      timeouts: obj({
        backendRequest: { type: 'string', pattern: DURATION },
        request: { type: 'string', pattern: DURATION },
      }),
    }),
    16,
    { minItems: 1, default: [{ matches: [{ path: PATH_PREFIX_ROOT }] }] },
  ),
});

/**
 * `GRPCRouteFilter` (`apis/v1/grpcroute_types.go`): header modifiers, a mirror and an extension, the same objects an
 * HTTPRoute's filters take.
 */
const grpcRouteFilter = obj(
  {
    extensionRef: localObjectReference,
    requestHeaderModifier: headerModifier,
    requestMirror,
    responseHeaderModifier: headerModifier,
    type: enumOf(['ResponseHeaderModifier', 'RequestHeaderModifier', 'RequestMirror', 'ExtensionRef']),
  },
  ['type'],
);

/**
 * `GRPCRouteSpec`: matches by gRPC service and method (`GRPCMethodMatch`) and headers; unlike an HTTPRoute's, its
 * rules and matches have no defaults (a rule without matches takes every request).
 */
const grpcRouteSpec = obj({
  hostnames: routeHostnames,
  parentRefs,
  rules: list(
    obj({
      backendRefs: list(
        obj(
          {
            filters: list(grpcRouteFilter, 16),
            ...backendObjectReference,
            weight: int32(0, { maximum: 1000000, default: 1 }),
          },
          ['name'],
        ),
        16,
      ),
      filters: list(grpcRouteFilter, 16),
      matches: list(
        obj({
          headers: headerMatches,
          method: obj({ method: str(undefined, 1024), service: str(undefined, 1024), type: matchType }),
        }),
        64,
      ),
      name: sectionName,
    }),
    16,
  ),
});

/** `GatewayClassSpec` (`apis/v1/gatewayclass_types.go`): the controller that implements the class, immutable. */
const gatewayClassSpec = obj(
  {
    controllerName: str(
      1,
      253,
      "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\\/[A-Za-z0-9\\/\\-._~%!$&'()*+,;=:]+$",
    ),
    parametersRef: obj({ group: group(), kind: kind(), name: str(1, 253), namespace }, ['group', 'kind', 'name']),
    description: str(undefined, 64),
  },
  ['controllerName'],
);

/**
 * The rules of the L4 routes (`TLSRouteRule`, `TCPRouteRule`): exactly one, forwarding to one to 16 weighted
 * backends, with no matches or filters.
 */
const l4RouteRules = list(
  obj(
    {
      backendRefs: list(
        obj({ ...backendObjectReference, weight: int32(0, { maximum: 1000000, default: 1 }) }, ['name']),
        16,
        { minItems: 1 },
      ),
      name: sectionName,
    },
    ['backendRefs'],
  ),
  1,
  { minItems: 1 },
);

/** `TLSRouteSpec` (`apis/v1/tlsroute_types.go`): the SNI hostnames it takes (one at least) and its one rule. */
const tlsRouteSpec = obj(
  { hostnames: list(str(1, 253, HOSTNAME), 1024, { minItems: 1 }), parentRefs, rules: l4RouteRules },
  ['hostnames', 'rules'],
);

/** `TCPRouteSpec` (`apis/v1/tcproute_types.go`): every connection a listener takes goes to the one rule's backends. */
const tcpRouteSpec = obj({ parentRefs, rules: l4RouteRules }, ['rules']);

/**
 * `ReferenceGrantSpec` (`apis/v1beta1/referencegrant_types.go`, the same in v1): which kinds in which namespaces may
 * refer to which kinds (all of a kind, or one by name) in the grant's namespace.
 */
const referenceGrantSpec = obj(
  {
    from: list(obj({ group: group(), kind: kind(), namespace }, ['group', 'kind', 'namespace']), 16, {
      minItems: 1,
    }),
    to: list(obj({ group: group(), kind: kind(), name: objectName }, ['group', 'kind']), 16, { minItems: 1 }),
  },
  ['from', 'to'],
);

const STATUS: JsonSchema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
const AGE = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
const ANNOTATIONS = { 'gateway.networking.k8s.io/channel': 'standard' };
const VERSIONS = [
  { name: 'v1', served: true, storage: true },
  { name: 'v1beta1', served: true, storage: false },
];

/** The Gateway API kinds the API server serves, with their CRDs' names and columns. */
export const GATEWAY_API_CRDS: readonly CustomResourceSource[] = [
  {
    group: 'gateway.networking.k8s.io',
    kind: 'GatewayClass',
    plural: 'gatewayclasses',
    singular: 'gatewayclass',
    listKind: 'GatewayClassList',
    shortNames: ['gc'],
    categories: ['gateway-api'],
    labels: {},
    annotations: ANNOTATIONS,
    versions: VERSIONS,
    printerColumns: [
      { name: 'Controller', type: 'string', jsonPath: '.spec.controllerName' },
      { name: 'Accepted', type: 'string', jsonPath: '.status.conditions[?(@.type=="Accepted")].status' },
      AGE,
    ],
    schema: { type: 'object', properties: { spec: gatewayClassSpec, status: STATUS }, required: ['spec'] },
  },
  {
    group: 'gateway.networking.k8s.io',
    kind: 'Gateway',
    plural: 'gateways',
    singular: 'gateway',
    listKind: 'GatewayList',
    shortNames: ['gtw'],
    categories: ['gateway-api'],
    labels: {},
    annotations: ANNOTATIONS,
    versions: VERSIONS,
    printerColumns: [
      { name: 'Class', type: 'string', jsonPath: '.spec.gatewayClassName' },
      { name: 'Address', type: 'string', jsonPath: '.status.addresses[*].value' },
      { name: 'Programmed', type: 'string', jsonPath: '.status.conditions[?(@.type=="Programmed")].status' },
      AGE,
    ],
    schema: { type: 'object', properties: { spec: gatewaySpec, status: STATUS }, required: ['spec'] },
  },
  {
    group: 'gateway.networking.k8s.io',
    kind: 'HTTPRoute',
    plural: 'httproutes',
    singular: 'httproute',
    listKind: 'HTTPRouteList',
    shortNames: [],
    categories: ['gateway-api'],
    labels: {},
    annotations: ANNOTATIONS,
    versions: VERSIONS,
    printerColumns: [{ name: 'Hostnames', type: 'string', jsonPath: '.spec.hostnames' }, AGE],
    schema: { type: 'object', properties: { spec: httpRouteSpec, status: STATUS }, required: ['spec'] },
  },
  {
    group: 'gateway.networking.k8s.io',
    kind: 'GRPCRoute',
    plural: 'grpcroutes',
    singular: 'grpcroute',
    listKind: 'GRPCRouteList',
    shortNames: [],
    categories: ['gateway-api'],
    labels: {},
    annotations: ANNOTATIONS,
    // The standard channel's CRD serves v1 alone (since Gateway API v1.1 it lists v1alpha2 unserved, since v1.2 not
    // at all); the experimental channel's also serves v1alpha2.
    versions: [{ name: 'v1', served: true, storage: true }],
    printerColumns: [{ name: 'Hostnames', type: 'string', jsonPath: '.spec.hostnames' }, AGE],
    schema: { type: 'object', properties: { spec: grpcRouteSpec, status: STATUS }, required: ['spec'] },
  },
  {
    group: 'gateway.networking.k8s.io',
    kind: 'TLSRoute',
    plural: 'tlsroutes',
    singular: 'tlsroute',
    listKind: 'TLSRouteList',
    shortNames: [],
    categories: ['gateway-api'],
    labels: {},
    annotations: ANNOTATIONS,
    // The standard channel's CRD lists v1alpha2 and v1alpha3 unserved (their schemas differ: more rules, optional
    // hostnames); only the experimental channel's serves them.
    versions: [
      { name: 'v1', served: true, storage: true },
      { name: 'v1alpha2', served: false, storage: false },
      { name: 'v1alpha3', served: false, storage: false },
    ],
    printerColumns: [AGE],
    schema: { type: 'object', properties: { spec: tlsRouteSpec, status: STATUS }, required: ['spec'] },
  },
  {
    group: 'gateway.networking.k8s.io',
    kind: 'TCPRoute',
    plural: 'tcproutes',
    singular: 'tcproute',
    listKind: 'TCPRouteList',
    shortNames: [],
    categories: ['gateway-api'],
    labels: {},
    annotations: ANNOTATIONS,
    // As TLSRoute's: v1alpha2 (up to 16 rules) is listed unserved, served by the experimental channel only.
    versions: [
      { name: 'v1', served: true, storage: true },
      { name: 'v1alpha2', served: false, storage: false },
    ],
    printerColumns: [AGE],
    schema: { type: 'object', properties: { spec: tcpRouteSpec, status: STATUS }, required: ['spec'] },
  },
  {
    group: 'gateway.networking.k8s.io',
    kind: 'ReferenceGrant',
    plural: 'referencegrants',
    singular: 'referencegrant',
    listKind: 'ReferenceGrantList',
    shortNames: ['refgrant'],
    categories: ['gateway-api'],
    labels: {},
    annotations: ANNOTATIONS,
    // Stored at v1beta1 still, as upstream's CRD keeps it, and served at v1 too; no status subresource.
    versions: [
      { name: 'v1', served: true, storage: false },
      { name: 'v1beta1', served: true, storage: true },
    ],
    printerColumns: [AGE],
    schema: { type: 'object', properties: { spec: referenceGrantSpec }, required: ['spec'] },
  },
];
