import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isResource, parseManifests, type ResourceOf } from '../registry/manifest-dir.js';
import { istioGatewayListeners } from './istio-gateways.js';
import type { RouteModel } from './http-routes.js';
import { convertVirtualService } from './virtual-services.js';

/** The objects of kind `kind` that `yaml` holds, which must parse. */
function parsed<K extends 'Service' | 'VirtualService' | 'IstioGateway' | 'Pod'>(
  yaml: string,
  kind: K,
): ResourceOf<K>[] {
  const { objects, errors } = parseManifests('test.yaml', yaml);
  assert.deepEqual(errors, []);
  return objects.filter((o): o is ResourceOf<K> => isResource(o) && o.kind === kind);
}

/** Each route's backends as `host:port`, or its action when it forwards nowhere. */
const backends = (routes: readonly RouteModel[]): unknown =>
  routes.map((r) => ('forward' in r.action ? r.action.forward.map((b) => `${b.hostname}:${b.port}`) : r.action));

/**
 * Istio's Gateway `ingress/gw` with `servers`, and an ingress gateway pod its selector matches. The Gateway's kind is
 * `IstioGateway`, as istiod reads it from the API beside the Gateway API's `Gateway`.
 */
function gatewayAndPod(servers: string): [ResourceOf<'IstioGateway'>, ResourceOf<'Pod'>] {
  const yaml = `apiVersion: networking.istio.io/v1
kind: IstioGateway
metadata: {name: gw, namespace: ingress}
spec:
  selector: {istio: ingressgateway}
  servers:
${servers}
---
apiVersion: v1
kind: Pod
metadata: {name: ingressgateway-0, namespace: ingress, labels: {istio: ingressgateway}}
spec: {containers: [{name: istio-proxy, image: amesh}]}
`;
  return [parsed(yaml, 'IstioGateway')[0]!, parsed(yaml, 'Pod')[0]!];
}

/** VirtualService `shop/shop` bound to `ingress/gw`, routing www.shop.test to the Service web. */
function shop() {
  const [vs] = parsed(
    `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: shop}
spec:
  hosts: [www.shop.test]
  gateways: [ingress/gw]
  http: [{route: [{destination: {host: web}}]}]
`,
    'VirtualService',
  );
  return convertVirtualService(vs!, new Map([['shop/web', new Set([80])]]), 'cluster.local');
}

const redirectToHttps = {
  name: 'ingress/gw.http.https-redirect',
  matches: [],
  requestHeaders: undefined,
  responseHeaders: undefined,
  action: { redirect: { scheme: 'https', hostname: '', port: 0, path: undefined, statusCode: 301 } },
  rewrite: undefined,
  timeoutMs: undefined,
};

test("an HTTP server with httpsRedirect answers every host it serves with a 301 to https, before any VirtualService's routes", () => {
  const [gw, pod] = gatewayAndPod(`  - name: http
    port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*.shop.test"]
    tls: {httpsRedirect: true}
  - name: https
    port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["*.shop.test"]
    tls: {mode: SIMPLE, credentialName: shop-cert}`);
  const { listeners, warnings } = istioGatewayListeners([gw], [pod], [shop()]);
  assert.deepEqual(warnings, []);
  const [http, https] = listeners.get('ingress/ingressgateway-0')!;
  assert.deepEqual(
    http?.virtualHosts.map((v) => [v.hostname, v.routes]),
    [
      ['www.shop.test', [redirectToHttps]],
      ['*.shop.test', [redirectToHttps]],
    ],
    "the VirtualService's host and the server's own redirect; nothing is routed",
  );
  assert.deepEqual(
    https?.virtualHosts.map((v) => [v.hostname, v.routes.map((r) => r.name)]),
    [['www.shop.test', ['shop/shop.0']]],
    'the HTTPS server routes as the VirtualService says',
  );
});

test('an HTTP server with httpsRedirect redirects even without a VirtualService bound to its Gateway', () => {
  const [gw, pod] = gatewayAndPod(`  - name: http
    port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
    tls: {httpsRedirect: true}`);
  const { listeners, warnings } = istioGatewayListeners([gw], [pod], []);
  assert.deepEqual(warnings, []);
  assert.deepEqual(listeners.get('ingress/ingressgateway-0'), [
    {
      name: 'ingress/gw.http',
      port: 80,
      protocol: 'HTTP',
      hostname: '',
      credentialNames: [],
      virtualHosts: [{ hostname: '*', routes: [redirectToHttps] }],
    },
  ]);
});

test("MUTUAL and OPTIONAL_MUTUAL servers verify clients against the credential's CA, served as <credentialName>-cacert, and pass on the SANs and pins a client certificate must match", () => {
  const [gw, pod] = gatewayAndPod(`  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [mtls.shop.test]
    tls:
      mode: MUTUAL
      credentialName: shop-cert
      subjectAltNames: [client.shop.test]
      verifyCertificateHash: ["AB:CD"]
      verifyCertificateSpki: [c3BraQ==]
  - port: {number: 8443, name: https-opt, protocol: HTTPS}
    hosts: [opt.shop.test]
    tls: {mode: OPTIONAL_MUTUAL, credentialName: opt-cert}
  - port: {number: 9443, name: https-simple, protocol: HTTPS}
    hosts: [simple.shop.test]
    tls: {mode: SIMPLE, credentialName: simple-cert, subjectAltNames: [ignored.shop.test]}`);
  const { listeners, warnings } = istioGatewayListeners([gw], [pod], []);
  assert.deepEqual(
    listeners
      .get('ingress/ingressgateway-0')
      ?.map((l) => [
        l.port,
        l.credentialNames,
        l.clientCaNames ?? [],
        l.clientCertificateOptional ?? false,
        [l.clientSubjectAltNames ?? [], l.clientCertificateHashes ?? [], l.clientCertificateSpkis ?? []],
      ]),
    [
      [
        443,
        ['kubernetes://shop-cert'],
        ['kubernetes://shop-cert-cacert'],
        false,
        [['client.shop.test'], ['AB:CD'], ['c3BraQ==']],
      ],
      [8443, ['kubernetes://opt-cert'], ['kubernetes://opt-cert-cacert'], true, [[], [], []]],
      [9443, ['kubernetes://simple-cert'], [], false, [[], [], []]],
    ],
  );
  assert.deepEqual(warnings, []);
});

test('a TLS server in SIMPLE or MUTUAL mode terminates TLS per host by SNI and relays what is inside to the first tcp route, as a TCP server does; one without a credentialName is not served', () => {
  const [gw, pod] = gatewayAndPod(`  - name: tls-simple
    port: {number: 9443, name: tls, protocol: TLS}
    hosts: [db.shop.test, cache.shop.test]
    tls: {mode: SIMPLE, credentialName: db-cert}
  - name: tls-mutual
    port: {number: 9444, name: tls-m, protocol: TLS}
    hosts: [db.shop.test]
    tls: {mode: MUTUAL, credentialName: db-cert}
  - name: no-cert
    port: {number: 9445, name: tls-n, protocol: TLS}
    hosts: [db.shop.test]
    tls: {mode: SIMPLE}`);
  const [vs] = parsed(
    `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: l4, namespace: shop}
spec:
  hosts: [db.shop.test]
  gateways: [ingress/gw]
  tcp:
  - route: [{destination: {host: db, port: {number: 5432}}}]`,
    'VirtualService',
  );
  const converted = convertVirtualService(vs!, new Map([['shop/db', new Set([5432])]]), 'cluster.local');
  const { listeners, warnings } = istioGatewayListeners([gw], [pod], [converted]);
  const db = [['*', [['db.shop.svc.cluster.local:5432']]]];
  assert.deepEqual(
    listeners
      .get('ingress/ingressgateway-0')
      ?.map((l) => [
        l.protocol,
        l.port,
        l.hostname,
        l.terminate ?? false,
        l.credentialNames,
        l.clientCaNames ?? [],
        l.virtualHosts.map((v) => [v.hostname, backends(v.routes)]),
      ]),
    [
      ['TLS', 9443, 'db.shop.test', true, ['kubernetes://db-cert'], [], db],
      ['TLS', 9443, 'cache.shop.test', true, ['kubernetes://db-cert'], [], db],
      ['TLS', 9444, 'db.shop.test', true, ['kubernetes://db-cert'], ['kubernetes://db-cert-cacert'], db],
    ],
  );
  assert.deepEqual(warnings, [
    "Gateway ingress/gw server no-cert: TLS with TLS mode SIMPLE is not served by amesh's gateway",
  ]);
});

test("a server's port is translated to the target port of the gateway's Service that has it, as Istio's ingress gateway Service maps 80 to 8080; a Service that opts out, or no such port, leaves it as it is", () => {
  const [gw, pod] = gatewayAndPod(`  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["*"]
    tls: {mode: SIMPLE, credentialName: cert}
  - port: {number: 9090, name: other, protocol: HTTP}
    hosts: ["*"]`);
  const services = parsed(
    `apiVersion: v1
kind: Service
metadata: {name: istio-ingressgateway, namespace: ingress}
spec:
  selector: {istio: ingressgateway}
  ports: [{name: http2, port: 80, targetPort: 8080}, {name: https, port: 443, targetPort: https-port}]
---
apiVersion: v1
kind: Service
metadata: {name: opted-out, namespace: ingress, labels: {experimental.istio.io/disable-gateway-port-translation: "true"}}
spec:
  selector: {istio: ingressgateway}
  ports: [{port: 9090, targetPort: 1234}]`,
    'Service',
  );
  const withPorts = {
    ...pod,
    spec: { ...pod.spec, containers: [{ name: 'istio-proxy', ports: [{ name: 'https-port', containerPort: 8443 }] }] },
  } as ResourceOf<'Pod'>;
  const { listeners } = istioGatewayListeners([gw], [withPorts], [], services);
  assert.deepEqual(
    listeners.get('ingress/ingressgateway-0')?.map((l) => [l.name, l.port]),
    [
      ['ingress/gw.0', 8080],
      ['ingress/gw.1', 8443],
      ['ingress/gw.2', 9090],
    ],
  );
});

test("a PASSTHROUGH server relays by SNI to the VirtualServices' tls routes (the first that names a host), a TCP server every connection to the first tcp route", () => {
  const [gw, pod] = gatewayAndPod(`  - name: tls
    port: {number: 443, name: tls, protocol: TLS}
    hosts: ["*.shop.test"]
    tls: {mode: PASSTHROUGH}
  - name: tcp
    port: {number: 9000, name: tcp, protocol: TCP}
    hosts: [db.shop.test, cache.shop.test]`);
  const [vs] = parsed(
    `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: l4, namespace: shop}
spec:
  hosts: [db.shop.test, api.shop.test]
  gateways: [ingress/gw]
  tls:
  - match: [{sniHosts: [db.shop.test], port: 443}]
    route: [{destination: {host: db, port: {number: 5432}}}]
  - match: [{sniHosts: [db.shop.test, api.shop.test]}]
    route: [{destination: {host: web}}]
  tcp:
  - match: [{port: 9000}]
    route: [{destination: {host: db, port: {number: 5432}}, weight: 80}, {destination: {host: web}, weight: 20}]
  - route: [{destination: {host: web}}]`,
    'VirtualService',
  );
  const converted = convertVirtualService(
    vs!,
    new Map([
      ['shop/web', new Set([80])],
      ['shop/db', new Set([5432])],
    ]),
    'cluster.local',
  );
  const { listeners, warnings } = istioGatewayListeners([gw], [pod], [converted]);
  assert.deepEqual(
    listeners
      .get('ingress/ingressgateway-0')
      ?.map((l) => [l.protocol, l.port, l.hostname, l.virtualHosts.map((v) => [v.hostname, backends(v.routes)])]),
    [
      [
        'TLS',
        443,
        '*.shop.test',
        [
          ['db.shop.test', [['db.shop.svc.cluster.local:5432']]],
          ['api.shop.test', [['web.shop.svc.cluster.local:80']]],
        ],
      ],
      ['TCP', 9000, '', [['*', [['db.shop.svc.cluster.local:5432', 'web.shop.svc.cluster.local:80']]]]],
    ],
  );
  assert.deepEqual(warnings, []);
});
