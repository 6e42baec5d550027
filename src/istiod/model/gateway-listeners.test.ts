import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  attach,
  attachParent,
  certificateRef,
  clientValidation,
  gatewayListeners,
  gatewayShape,
  listenerHostnames,
  routeShape,
} from './gateway-listeners.js';
import { grantShape } from './reference-grants.js';
import type { RouteModel } from './http-routes.js';

const gw = gatewayShape('ingress', 'gw', {
  gatewayClassName: 'istio',
  listeners: [
    { name: 'http', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } },
    {
      name: 'https',
      port: 443,
      protocol: 'HTTPS',
      hostname: '*.example.com',
      tls: { certificateRefs: [{ name: 'cert' }, { name: 'far', namespace: 'certs' }] },
    },
    { name: 'tls', port: 9443, protocol: 'TLS', tls: { mode: 'Passthrough' } },
  ],
});
const [http, https] = gw.listeners as [(typeof gw.listeners)[number], (typeof gw.listeners)[number]];
const none = new Map<string, Record<string, string>>();

/** A route answering 200 itself, named `name`: where a listener's routes go is what these tests look at. */
const route = (name: string): RouteModel => ({
  name,
  matches: [],
  requestHeaders: undefined,
  responseHeaders: undefined,
  action: { directStatus: 200 },
  rewrite: undefined,
  timeoutMs: undefined,
});

test('hostnames meet as the Gateway API says: the more specific name of each pair, a wildcard covering only names below it', () => {
  assert.deepEqual(listenerHostnames(https, ['a.example.com', 'x.a.example.com', 'example.com', 'other.test']), [
    'a.example.com',
    'x.a.example.com',
  ]);
  assert.deepEqual(listenerHostnames(https, ['*.a.example.com', '*.com']), ['*.a.example.com', '*.example.com']);
  assert.deepEqual(listenerHostnames(https, []), ['*.example.com'], "a route without hostnames takes the listener's");
  assert.deepEqual(listenerHostnames(http, []), ['*']);
});

test("a route of another namespace attaches only where allowedRoutes admits it, with Istio's reasons", () => {
  const route = routeShape('HTTPRoute', 'app', 'r', {
    parentRefs: [{ name: 'gw', namespace: 'ingress' }],
    hostnames: ['a.example.com'],
  });
  const ref = route.parentRefs[0]!;
  assert.deepEqual(attach(route, ref, gw, http, none), { attached: true, hostnames: ['a.example.com'] });
  assert.deepEqual(attach(route, ref, gw, https, none), {
    attached: false,
    reason: 'NotAllowedByListeners',
    message: 'hostnames matched parent hostname "*.example.com", but namespace "app" is not allowed by the parent',
  });
  const other = routeShape('HTTPRoute', 'ingress', 'o', {
    parentRefs: [{ name: 'gw', sectionName: 'https' }],
    hostnames: ['other.test'],
  });
  assert.deepEqual(attachParent(other, other.parentRefs[0]!, gw, none).outcome, {
    attached: false,
    reason: 'NoMatchingListenerHostname',
    message: 'no hostnames matched parent hostname "*.example.com"',
  });
  const tcp = routeShape('TCPRoute', 'ingress', 't', { parentRefs: [{ name: 'gw', port: 80 }] });
  assert.equal(attachParent(tcp, tcp.parentRefs[0]!, gw, none).outcome.attached, false);
});

test("TLSRoutes and TCPRoutes attach to the listeners of their kind, refused elsewhere with Istio's reasons", () => {
  const tls = routeShape('TLSRoute', 'ingress', 't', { parentRefs: [{ name: 'gw' }], hostnames: ['db.test'] });
  assert.deepEqual(attachParent(tls, tls.parentRefs[0]!, gw, none), {
    listeners: new Map([['tls', ['db.test']]]),
    outcome: { attached: true, hostnames: [] },
  });
  const tcp = routeShape('TCPRoute', 'ingress', 'c', { parentRefs: [{ name: 'gw', sectionName: 'http' }] });
  assert.deepEqual(attachParent(tcp, tcp.parentRefs[0]!, gw, none).outcome, {
    attached: false,
    reason: 'NotAllowedByListeners',
    message: 'kind gateway.networking.k8s.io/v1/TCPRoute is not allowed',
  });
});

test('a certificateRef to another namespace needs a ReferenceGrant there for Gateways of this one; only Secrets are certificates', () => {
  const refs = https.tls!.certificateRefs;
  assert.deepEqual(certificateRef(refs[0]!, gw, []), {
    ok: true,
    namespace: 'ingress',
    name: 'cert',
    credential: 'kubernetes-gateway://ingress/cert',
  });
  assert.equal((certificateRef(refs[1]!, gw, []) as { reason: string }).reason, 'RefNotPermitted');
  const grant = grantShape('certs', {
    from: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ingress' }],
    to: [{ group: '', kind: 'Secret' }],
  });
  assert.equal(certificateRef(refs[1]!, gw, [grant]).ok, true);
  const elsewhere = grantShape('certs', {
    ...grant,
    from: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'app' }],
    to: [{ group: '', kind: 'Secret' }],
  });
  assert.equal(certificateRef(refs[1]!, gw, [elsewhere]).ok, false, 'a grant to another namespace does not count');
  assert.equal(
    (certificateRef({ kind: 'ConfigMap', name: 'cm' }, gw, []) as { reason: string }).reason,
    'InvalidCertificateRef',
  );
});

test('listeners: HTTP and HTTPS with their permitted certificates and virtual hosts; a TLS passthrough listener takes TLSRoutes only, by SNI', () => {
  const shape = routeShape('HTTPRoute', 'ingress', 'r', {
    parentRefs: [{ name: 'gw' }],
    hostnames: ['b.example.com', 'a.example.com'],
  });
  const tls = routeShape('TLSRoute', 'ingress', 't', { parentRefs: [{ name: 'gw' }], hostnames: ['db.test'] });
  const out = gatewayListeners(
    gw,
    [
      { shape, routes: [route('ingress/r.0')] },
      { shape: tls, routes: [route('ingress/t.0')] },
    ],
    [],
    none,
  );
  assert.deepEqual(
    out.map((l) => [l.name, l.credentialNames, l.virtualHosts.map((v) => v.hostname)]),
    [
      ['http', [], ['a.example.com', 'b.example.com']],
      ['https', ['kubernetes-gateway://ingress/cert'], ['a.example.com', 'b.example.com']],
      ['tls', [], ['db.test']],
    ],
  );
});

test("frontend TLS validation: a port's entry, else the default, names the CA clients must chain to (a ConfigMap, or a Secret), optional with AllowInsecureFallback; a listener whose CA reference cannot be used is not served", () => {
  const withFrontend = (frontend: object) =>
    gatewayShape('ingress', 'gw', {
      gatewayClassName: 'istio',
      listeners: [
        { name: 'https', port: 443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'cert' }] } },
        { name: 'alt', port: 8443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'cert' }] } },
      ],
      tls: { frontend },
    });
  const g = withFrontend({
    default: { validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'client-ca' }] } },
    perPort: [
      {
        port: 8443,
        tls: {
          validation: {
            caCertificateRefs: [{ group: '', kind: 'Secret', name: 'client-ca' }],
            mode: 'AllowInsecureFallback',
          },
        },
      },
    ],
  });
  assert.deepEqual(
    gatewayListeners(g, [], [], none).map((l) => [l.name, l.clientCaNames, l.clientCertificateOptional]),
    [
      ['https', ['configmap://ingress/client-ca-cacert'], false],
      ['alt', ['kubernetes-gateway://ingress/client-ca-cacert'], true],
    ],
  );
  const far = withFrontend({
    default: { validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'ca', namespace: 'certs' }] } },
  });
  assert.deepEqual(clientValidation(far, 443, []), {
    ok: false,
    reason: 'RefNotPermitted',
    message: 'caCertificateRef certs/ca not accessible to a Gateway in namespace "ingress" (missing a ReferenceGrant?)',
  });
  assert.deepEqual(gatewayListeners(far, [], [], none), [], 'not served without the check it asks for');
  const granted = [
    grantShape('certs', {
      from: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'ingress' }],
      to: [{ group: '', kind: 'ConfigMap' }],
    }),
  ];
  assert.deepEqual(clientValidation(far, 443, granted), {
    ok: true,
    caName: 'configmap://certs/ca-cacert',
    optional: false,
  });
  const two = withFrontend({
    default: {
      validation: {
        caCertificateRefs: [
          { kind: 'ConfigMap', name: 'a' },
          { kind: 'ConfigMap', name: 'b' },
        ],
      },
    },
  });
  assert.equal(clientValidation(two, 443, [])?.ok, false);
  assert.equal(clientValidation(gw, 443, []), undefined, 'no frontend: clients are not asked for certificates');
});

test('a TLS listener in Terminate mode (the default) names its certificates and takes TLSRoutes by SNI and TCPRoutes, which a passthrough listener refuses', () => {
  const g = gatewayShape('ingress', 'gw', {
    gatewayClassName: 'istio',
    listeners: [
      { name: 'term', port: 9443, protocol: 'TLS', tls: { certificateRefs: [{ name: 'db-cert' }] } },
      { name: 'pass', port: 9444, protocol: 'TLS', tls: { mode: 'Passthrough' } },
    ],
  });
  const tls = routeShape('TLSRoute', 'ingress', 't', { parentRefs: [{ name: 'gw' }], hostnames: ['db.test'] });
  const tcp = routeShape('TCPRoute', 'ingress', 'c', { parentRefs: [{ name: 'gw' }] });
  const out = gatewayListeners(
    g,
    [
      { shape: tls, routes: [route('ingress/t.0')] },
      { shape: tcp, routes: [route('ingress/c.0')] },
    ],
    [],
    none,
  );
  assert.deepEqual(
    out.map((l) => [l.name, l.terminate ?? false, l.credentialNames, l.virtualHosts.map((v) => v.hostname)]),
    [
      ['term', true, ['kubernetes-gateway://ingress/db-cert'], ['*', 'db.test']],
      ['pass', false, [], ['db.test']],
    ],
  );
  const [term, pass] = g.listeners as [(typeof g.listeners)[number], (typeof g.listeners)[number]];
  assert.equal(attach(tcp, { name: 'gw' }, g, term, none).attached, true);
  assert.deepEqual(attach(tcp, { name: 'gw' }, g, pass, none), {
    attached: false,
    reason: 'NotAllowedByListeners',
    message: 'kind gateway.networking.k8s.io/v1/TCPRoute is not allowed',
  });
});
