import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests } from '../registry/manifest-dir.js';
import { IncrementalMeshModel } from './incremental-mesh-model.js';
import type { GatewayAddressModel } from './types.js';

const CFG = {
  clusterId: 'Kubernetes',
  trustDomain: 'cluster.local',
  rootNamespace: 'istio-system',
  domainSuffix: 'cluster.local',
  ipAutoallocate: false,
};

function objects(yaml: string): ReturnType<typeof parseManifests>['objects'] {
  const { objects, errors } = parseManifests('m.yaml', yaml);
  assert.deepEqual(errors, []);
  return objects;
}

/** A waypoint Gateway in `ns`, published at its Service's hostname once `ready`. */
function gateway(name: string, ns: string, o: { for?: string; from?: string; ready?: boolean } = {}): string {
  const labels = o.for === undefined ? '{}' : `{istio.io/waypoint-for: ${o.for}}`;
  const allowed = o.from === undefined ? '' : `, allowedRoutes: {namespaces: {from: ${o.from}}}`;
  const status =
    o.ready === false ? '' : `\nstatus: {addresses: [{type: Hostname, value: ${name}.${ns}.svc.cluster.local}]}`;
  return `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ${name}, namespace: ${ns}, labels: ${labels}}
spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE${allowed}}]}${status}`;
}

function pod(name: string, ns: string, ip: string, labels = '{app: echo}'): string {
  return `
---
apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}, labels: ${labels}}
spec: {nodeName: node1}
status: {phase: Running, podIP: ${ip}}`;
}

function service(name: string, ns: string, ip: string, labels = '{}'): string {
  return `
---
apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: ${ns}, labels: ${labels}}
spec: {clusterIP: ${ip}, selector: {app: echo}, ports: [{port: 80}]}`;
}

const ns = (name: string, labels = '{}'): string => `
---
apiVersion: v1
kind: Namespace
metadata: {name: ${name}, labels: ${labels}}`;

const at = (name: string, namespace: string): GatewayAddressModel => ({
  hostname: { namespace, hostname: `${name}.${namespace}.svc.cluster.local` },
  hboneMtlsPort: 15008,
});

function waypoints(yaml: string): {
  svc: (k: string) => unknown;
  wl: (k: string) => unknown;
  model: IncrementalMeshModel;
} {
  const model = new IncrementalMeshModel(CFG);
  model.replaceAll(objects(yaml));
  const get = (k: string, kind: 'service' | 'workload'): unknown => {
    const a = model.address(k) as Record<string, { waypoint?: unknown }> | undefined;
    assert.ok(a?.[kind] !== undefined, `no ${kind} ${k}`);
    return a[kind].waypoint;
  };
  return { svc: (k) => get(k, 'service'), wl: (k) => get(k, 'workload'), model };
}

test('a namespace labelled istio.io/use-waypoint binds its Services to a service waypoint, not its pods', () => {
  const m = waypoints(
    ns('shop', '{istio.io/use-waypoint: waypoint}') +
      gateway('waypoint', 'shop') +
      service('echo', 'shop', '10.96.0.10') +
      pod('echo-0', 'shop', '10.1.0.5'),
  );
  assert.deepEqual(m.svc('shop/echo.shop.svc.cluster.local'), at('waypoint', 'shop'));
  assert.equal(m.wl('Kubernetes//Pod/shop/echo-0'), undefined);
});

test('istio.io/waypoint-for decides what binds: workload binds pods only, all binds both, none nothing', () => {
  const yaml = (f: string): string =>
    ns('shop', '{istio.io/use-waypoint: wp}') +
    gateway('wp', 'shop', { for: f }) +
    service('echo', 'shop', '10.96.0.10') +
    pod('echo-0', 'shop', '10.1.0.5');
  const w = waypoints(yaml('workload'));
  assert.equal(w.svc('shop/echo.shop.svc.cluster.local'), undefined);
  assert.deepEqual(w.wl('Kubernetes//Pod/shop/echo-0'), at('wp', 'shop'));
  const a = waypoints(yaml('all'));
  assert.deepEqual(a.svc('shop/echo.shop.svc.cluster.local'), at('wp', 'shop'));
  assert.deepEqual(a.wl('Kubernetes//Pod/shop/echo-0'), at('wp', 'shop'));
  const n = waypoints(yaml('none'));
  assert.equal(n.svc('shop/echo.shop.svc.cluster.local'), undefined);
  assert.equal(n.wl('Kubernetes//Pod/shop/echo-0'), undefined);
});

test("an object's own label wins over its namespace's; `none` opts it out", () => {
  const m = waypoints(
    ns('shop', '{istio.io/use-waypoint: wp}') +
      gateway('wp', 'shop') +
      gateway('other', 'shop') +
      service('echo', 'shop', '10.96.0.10', '{istio.io/use-waypoint: other}') +
      service('opt-out', 'shop', '10.96.0.11', '{istio.io/use-waypoint: none}'),
  );
  assert.deepEqual(m.svc('shop/echo.shop.svc.cluster.local'), at('other', 'shop'));
  assert.equal(m.svc('shop/opt-out.shop.svc.cluster.local'), undefined);
});

test('across namespaces with istio.io/use-waypoint-namespace, only when the waypoint allows that namespace', () => {
  const yaml = (from?: string): string =>
    ns('shop') +
    ns('mesh') +
    gateway('shared', 'mesh', from === undefined ? {} : { from }) +
    service('echo', 'shop', '10.96.0.10', '{istio.io/use-waypoint: shared, istio.io/use-waypoint-namespace: mesh}');
  assert.equal(waypoints(yaml()).svc('shop/echo.shop.svc.cluster.local'), undefined, 'Same is the default');
  assert.deepEqual(waypoints(yaml('All')).svc('shop/echo.shop.svc.cluster.local'), at('shared', 'mesh'));
});

test("a Gateway that has published no address is no waypoint yet, and a waypoint's own Service and pods are not bound", () => {
  const m = waypoints(
    ns('shop', '{istio.io/use-waypoint: wp}') +
      gateway('wp', 'shop', { for: 'all', ready: false }) +
      service('echo', 'shop', '10.96.0.10'),
  );
  assert.equal(m.svc('shop/echo.shop.svc.cluster.local'), undefined);
  const self = waypoints(
    ns('shop', '{istio.io/use-waypoint: wp}') +
      gateway('wp', 'shop', { for: 'all' }) +
      service('wp', 'shop', '10.96.0.20', '{gateway.istio.io/managed: istio.io-mesh-controller}') +
      pod('wp-0', 'shop', '10.1.0.9', '{gateway.networking.k8s.io/gateway-name: wp}'),
  );
  assert.equal(self.svc('shop/wp.shop.svc.cluster.local'), undefined);
  assert.equal(self.wl('Kubernetes//Pod/shop/wp-0'), undefined);
});

test('a Gateway becoming ready binds what was waiting for it, incrementally', () => {
  const base = ns('shop', '{istio.io/use-waypoint: wp}') + service('echo', 'shop', '10.96.0.10');
  const m = waypoints(base + gateway('wp', 'shop', { ready: false }));
  assert.equal(m.svc('shop/echo.shop.svc.cluster.local'), undefined);
  const [gw] = objects(gateway('wp', 'shop'));
  const changes = m.model.update(new Map([['Gateway/shop/wp', gw]]));
  assert.ok(changes.addresses.has('shop/echo.shop.svc.cluster.local'));
  assert.deepEqual(m.svc('shop/echo.shop.svc.cluster.local'), at('wp', 'shop'));
});
