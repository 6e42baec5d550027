import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIp } from '../../lib/ip.js';
import { parseManifests } from '../registry/manifest-dir.js';
import { buildMeshModel } from './mesh-model.js';
import { TunnelProtocol, WorkloadStatus, type ServiceModel, type WorkloadModel } from './types.js';

const CFG = {
  clusterId: 'Kubernetes',
  trustDomain: 'cluster.local',
  rootNamespace: 'istio-system',
  domainSuffix: 'cluster.local',
  ipAutoallocate: true,
};

function model(yaml: string): ReturnType<typeof buildMeshModel> {
  const { objects, errors } = parseManifests('m.yaml', yaml);
  assert.deepEqual(errors, []);
  return buildMeshModel(objects, CFG);
}
const wl = (m: ReturnType<typeof buildMeshModel>, uid: string): WorkloadModel => {
  const a = m.addresses.get(uid);
  assert.ok(a !== undefined && 'workload' in a, `no workload ${uid}`);
  return a.workload;
};

const MESH = `
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web, version: v2}, annotations: {ambient.istio.io/redirection: enabled}}
spec: {serviceAccountName: web, nodeName: node1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {phase: Running, podIP: 10.1.0.5}
---
apiVersion: v1
kind: Pod
metadata: {name: legacy-0, namespace: shop, labels: {app: legacy}}
spec: {nodeName: node2}
status: {phase: Running, podIP: 10.1.0.6, conditions: [{type: Ready, status: "False"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: done-0, namespace: shop}
status: {phase: Succeeded, podIP: 10.1.0.7}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIP: 10.96.0.20, selector: {app: web}, ports: [{port: 80, targetPort: http}, {port: 81, targetPort: missing}, {port: 9000}]}
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: shop}
spec: {type: ExternalName, externalName: example.com}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: web-only, namespace: shop}
spec: {selector: {matchLabels: {app: web}}, rules: [{}]}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: shop}
spec: {mtls: {mode: STRICT}}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: legacy, namespace: shop}
spec: {selector: {matchLabels: {app: legacy}}, mtls: {mode: PERMISSIVE}}
`;

test('Pod -> Workload: uid, HBONE only when redirection is enabled, defaults, canonical labels, readiness', () => {
  const m = model(MESH);
  const w = wl(m, 'Kubernetes//Pod/shop/web-0');
  assert.equal(w.tunnelProtocol, TunnelProtocol.HBONE);
  assert.deepEqual([...w.addresses[0]!], [10, 1, 0, 5]);
  assert.equal(w.trustDomain, '', 'cluster.local is omitted');
  assert.equal(w.serviceAccount, 'web');
  assert.equal(w.node, 'node1');
  assert.equal(w.canonicalName, 'web');
  assert.equal(w.canonicalRevision, 'v2');
  assert.equal(w.status, WorkloadStatus.HEALTHY);
  const legacy = wl(m, 'Kubernetes//Pod/shop/legacy-0');
  assert.equal(legacy.tunnelProtocol, TunnelProtocol.NONE);
  assert.equal(legacy.serviceAccount, 'default');
  assert.equal(legacy.status, WorkloadStatus.UNHEALTHY);
  assert.equal(m.addresses.get('Kubernetes//Pod/shop/done-0'), undefined, 'terminal pods are skipped');
});

test('a terminating pod (deletionTimestamp set) is an UNHEALTHY workload, though still Ready', () => {
  const m = model(`apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, deletionTimestamp: "2026-12-02T07:00:00Z", labels: {app: web}}
spec: {nodeName: node1}
status: {podIP: 10.1.0.5, conditions: [{type: Ready, status: "True"}]}
`);
  assert.equal(wl(m, 'Kubernetes//Pod/shop/web-0').status, WorkloadStatus.UNHEALTHY);
});

test('Service -> Service with port mapping; named target ports resolve per pod, unknown names are left out', () => {
  const m = model(MESH);
  const s = m.addresses.get('shop/web.shop.svc.cluster.local');
  assert.ok(s !== undefined && 'service' in s);
  const svc: ServiceModel = s.service;
  assert.deepEqual(svc.ports, [
    { servicePort: 80, targetPort: 0, appProtocol: 0 },
    { servicePort: 81, targetPort: 0, appProtocol: 0 },
    { servicePort: 9000, targetPort: 9000, appProtocol: 0 },
  ]);
  assert.deepEqual([...svc.addresses[0]!.address], [10, 96, 0, 20]);
  assert.equal(svc.canonical, true);
  assert.deepEqual(wl(m, 'Kubernetes//Pod/shop/web-0').services, {
    'shop/web.shop.svc.cluster.local': [
      { servicePort: 80, targetPort: 8080 },
      { servicePort: 9000, targetPort: 9000 },
    ],
  });
  assert.equal(m.addresses.get('shop/ext.shop.svc.cluster.local'), undefined, 'ExternalName is skipped');
});

test('selector policies and STRICT PeerAuthentication are listed on the workloads they apply to', () => {
  const m = model(MESH);
  assert.deepEqual(wl(m, 'Kubernetes//Pod/shop/web-0').authorizationPolicies, [
    'istio-system/istio_converted_static_strict',
    'shop/web-only',
  ]);
  assert.deepEqual(
    wl(m, 'Kubernetes//Pod/shop/legacy-0').authorizationPolicies,
    [],
    'a workload-level PERMISSIVE overrides the namespace STRICT',
  );
  const strict = m.authorizations.get('istio-system/istio_converted_static_strict');
  assert.ok(strict !== undefined);
  assert.deepEqual(strict.rules[0]!.clauses[0]!.matches[0]!.notPrincipals, [{ presence: true }]);
});

test('the static STRICT policy is sent only when some PeerAuthentication exists', () => {
  const m = model(
    MESH.split('---')
      .filter((d) => !d.includes('PeerAuthentication'))
      .join('---'),
  );
  assert.equal(m.authorizations.get('istio-system/istio_converted_static_strict'), undefined);
});

const EXTERNAL = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  hosts: [db.example.internal]
  addresses: [10.200.0.0/24]
  ports: [{number: 5432, name: pg, protocol: TCP}]
  resolution: STATIC
  endpoints:
  - {address: 10.20.0.1, ports: {pg: 6432}, weight: 3, serviceAccount: db}
  - {address: db-2.example.internal}
  workloadSelector: {labels: {app: vm-db}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: data}
spec: {address: 10.30.0.7, labels: {app: vm-db, networking.istio.io/tunnel: http}, serviceAccount: vm, weight: 2, ports: {pg: 15432}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: any, namespace: data}
spec: {hosts: [api.example.com], ports: [{number: 443, name: tls}], resolution: NONE}
`;

test('ServiceEntry -> one Service per host (CIDR VIPs, NONE = PASSTHROUGH); inline endpoints and WorkloadEntries -> Workloads', () => {
  const m = model(EXTERNAL);
  const db = m.addresses.get('data/db.example.internal');
  assert.ok(db !== undefined && 'service' in db);
  assert.deepEqual(
    db.service.addresses.map((a) => [[...a.address].join('.'), a.length]),
    [['10.200.0.0', 24]],
  );
  assert.deepEqual(db.service.ports, [{ servicePort: 5432, targetPort: 5432, appProtocol: 4 }]);
  const any = m.addresses.get('data/api.example.com');
  assert.ok(any !== undefined && 'service' in any);
  assert.equal(any.service.loadBalancing?.mode, 3, 'PASSTHROUGH');
  assert.equal(any.service.loadBalancing?.healthPolicy, 1, 'ALLOW_ALL, as upstream sends for NONE');

  const ep = wl(m, 'Kubernetes/networking.istio.io/ServiceEntry/data/db/10.20.0.1');
  assert.deepEqual([...ep.addresses[0]!], [10, 20, 0, 1]);
  assert.equal(ep.capacity, 3);
  assert.equal(ep.serviceAccount, 'db');
  assert.deepEqual(
    ep.services,
    { 'data/db.example.internal': [{ servicePort: 5432, targetPort: 6432 }] },
    'endpoint port by name',
  );
  const dns = wl(m, 'Kubernetes/networking.istio.io/ServiceEntry/data/db/db-2.example.internal');
  assert.equal(dns.hostname, 'db-2.example.internal');
  assert.deepEqual(dns.addresses, []);

  const vm = wl(m, 'Kubernetes/networking.istio.io/WorkloadEntry/data/vm-1');
  assert.equal(vm.capacity, 2);
  assert.equal(vm.tunnelProtocol, TunnelProtocol.HBONE);
  assert.equal(vm.nativeTunnel, true);
  assert.deepEqual(
    vm.services,
    { 'data/db.example.internal': [{ servicePort: 5432, targetPort: 15432 }] },
    'selected by workloadSelector, port by name',
  );
});

test('a ServiceEntry with one address that is neither an IP nor a CIDR gives no Service at all, as upstream drops it', () => {
  const se = (name: string, addresses: string): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ${name}, namespace: data}
spec: {hosts: [${name}.example.com], addresses: [${addresses}], ports: [{number: 80, name: http}], resolution: STATIC}
`;
  const m = model(
    [se('good', '10.9.0.1, 10.9.1.0/24'), se('bad', '10.9.0.2, not-an-ip'), se('badlen', '10.9.0.0/33')].join('---\n'),
  );
  assert.ok(m.addresses.has('data/good.example.com'));
  assert.equal(m.addresses.has('data/bad.example.com'), false);
  assert.equal(m.addresses.has('data/badlen.example.com'), false);
});

/** A ServiceEntry in `data` with one port, `spec` merged in, and one address istiod allocated its first host. */
const allocated = (name: string, spec: string, value: string, labels = '{}'): string => {
  const host = /hosts: \[("?[^,\]"]+"?)/.exec(spec)![1]!;
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ${name}, namespace: data, labels: ${labels}}
spec: {ports: [{number: 443, name: tls}], ${spec}}
status: {addresses: [{value: ${value}, host: ${host}}]}
`;
};

/** ServiceEntries whose status holds addresses istiod allocated (and one stray address of each kind). */
const ALLOCATED = [
  `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ext, namespace: data}
spec: {hosts: [a.example.com, b.example.com, c.example.com], ports: [{number: 443, name: tls}], resolution: DNS}
status:
  addresses:
  - {value: 240.240.0.1, host: a.example.com}
  - {value: "2001:2:0:0::1", host: a.example.com}
  - {value: not-an-ip, host: b.example.com}
  - {value: 240.240.0.9, host: elsewhere.example.com}
`,
  allocated('wild', 'hosts: ["*.wild.example.com"], resolution: DNS', '240.240.0.2'),
  allocated('dynamic', 'hosts: ["*.dyn.example.com"], resolution: DYNAMIC_DNS', '240.240.0.3'),
  allocated(
    'opted-out',
    'hosts: [out.example.com], resolution: STATIC',
    '240.240.0.4',
    '{networking.istio.io/enable-autoallocate-ip: "False"}',
  ),
  allocated('own', 'hosts: [own.example.com], addresses: [10.9.0.1], resolution: STATIC', '240.240.0.5'),
  allocated('unset', 'hosts: [unset.example.com]', '240.240.0.6'),
].join('---\n');

test("a ServiceEntry's allocated status.addresses are its hosts' VIPs when it qualifies: resolution not NONE (nor unset), no spec.addresses, not opted out, a wildcard only under DYNAMIC_DNS", () => {
  const vips = (cfg: typeof CFG, host: string): string[] => {
    const { objects, errors } = parseManifests('m.yaml', ALLOCATED);
    assert.deepEqual(errors, []);
    const a = buildMeshModel(objects, cfg).addresses.get(`data/${host}`);
    assert.ok(a !== undefined && 'service' in a, `no service ${host}`);
    return a.service.addresses.map((x) => `${formatIp(x.address)!}${x.length === undefined ? '' : `/${x.length}`}`);
  };
  assert.deepEqual(vips(CFG, 'a.example.com'), ['240.240.0.1', '2001:2::1']);
  assert.deepEqual(vips(CFG, 'b.example.com'), [], 'a value that is not an IP is skipped');
  assert.deepEqual(vips(CFG, 'c.example.com'), [], 'a host with no allocated address yet has none');
  assert.deepEqual(vips(CFG, '*.wild.example.com'), []);
  assert.deepEqual(vips(CFG, '*.dyn.example.com'), ['240.240.0.3']);
  assert.deepEqual(vips(CFG, 'out.example.com'), []);
  assert.deepEqual(vips(CFG, 'own.example.com'), ['10.9.0.1']);
  assert.deepEqual(vips(CFG, 'unset.example.com'), [], 'resolution unset is NONE');
  assert.deepEqual(
    vips({ ...CFG, ipAutoallocate: false }, 'a.example.com'),
    [],
    'PILOT_ENABLE_IP_AUTOALLOCATE=false serves no allocated address',
  );
});

test('PeerAuthentication portLevelMtls becomes converted_peer_authentication_<name> in place of the static policy', () => {
  const m = model(`
apiVersion: v1
kind: Pod
metadata: {name: a-0, namespace: ns, labels: {app: a}}
status: {podIP: 10.1.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b-0, namespace: ns, labels: {app: b}}
status: {podIP: 10.1.0.2}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: strict, namespace: istio-system}
spec: {mtls: {mode: STRICT}}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: a-metrics, namespace: ns}
spec: {selector: {matchLabels: {app: a}}, portLevelMtls: {"9090": {mode: PERMISSIVE}, "8080": {mode: STRICT}}}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: b-admin, namespace: ns}
spec: {selector: {matchLabels: {app: b}}, mtls: {mode: PERMISSIVE}, portLevelMtls: {"8443": {mode: STRICT}}}
`);
  assert.deepEqual(wl(m, 'Kubernetes//Pod/ns/a-0').authorizationPolicies, [
    'ns/converted_peer_authentication_a-metrics',
  ]);
  const a = m.authorizations.get('ns/converted_peer_authentication_a-metrics');
  assert.ok(a !== undefined);
  assert.equal(a.rules.length, 1, 'under STRICT: one rule AND-ing the open ports and "no identity"');
  assert.deepEqual(
    a.rules[0]!.clauses.map((c) => c.matches[0]!.notDestinationPorts),
    [[9090], []],
  );
  assert.deepEqual(a.rules[0]!.clauses[1]!.matches[0]!.notPrincipals, [{ presence: true }]);
  const b = m.authorizations.get('ns/converted_peer_authentication_b-admin');
  assert.ok(b !== undefined);
  assert.deepEqual(
    b.rules.map((r) => [r.clauses[0]!.matches[0]!.destinationPorts, r.clauses[0]!.matches[0]!.notPrincipals]),
    [[[8443], [{ presence: true }]]],
    'under PERMISSIVE: a rule per STRICT port',
  );
  assert.deepEqual(wl(m, 'Kubernetes//Pod/ns/b-0').authorizationPolicies, ['ns/converted_peer_authentication_b-admin']);
});

const KUBERNETES_SERVICE = `
apiVersion: v1
kind: Service
metadata: {name: kubernetes, namespace: default}
spec: {clusterIP: 10.96.0.1, ports: [{name: https, port: 443, targetPort: 6443}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: kubernetes, namespace: default, labels: {kubernetes.io/service-name: kubernetes}}
addressType: IPv4
endpoints: [{addresses: [172.18.0.1], conditions: {ready: true}}, {addresses: [172.18.0.2], conditions: {ready: false}}, {addresses: [172.18.0.1]}, {addresses: [not-an-ip]}]
ports: [{name: https, port: 6443, protocol: TCP}, {name: https, port: 6443, protocol: UDP}, {name: other, port: 1}]
`;

test('a Service without a selector (default/kubernetes) is backed by the non-pod endpoints of its EndpointSlices', () => {
  const m = model(KUBERNETES_SERVICE);
  const uid = (ip: string): string => `Kubernetes/discovery.k8s.io/EndpointSlice/default/kubernetes/${ip}`;
  const w = wl(m, uid('172.18.0.1'));
  assert.deepEqual(w.services, {
    'default/kubernetes.default.svc.cluster.local': [{ servicePort: 443, targetPort: 6443 }],
  });
  assert.deepEqual(
    [w.name, w.namespace, w.networkMode, w.serviceAccount, w.tunnelProtocol, w.status, w.addresses],
    ['kubernetes', 'default', 1, '', TunnelProtocol.NONE, WorkloadStatus.HEALTHY, [new Uint8Array([172, 18, 0, 1])]],
    'host network mode, no identity, plain TCP',
  );
  assert.equal(wl(m, uid('172.18.0.2')).status, WorkloadStatus.UNHEALTHY, 'ready: false');
  const fromSlices = [...m.addresses.keys()].filter((k) => k.includes('/EndpointSlice/'));
  assert.deepEqual(
    fromSlices.sort(),
    [uid('172.18.0.1'), uid('172.18.0.2')],
    'a repeated address and a non-IP are skipped',
  );
});

test('EndpointSlices of no Service, of an unknown Service or of FQDN addresses give no workload', () => {
  const m = model(`
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: loose, namespace: default}
addressType: IPv4
endpoints: [{addresses: [10.9.0.1]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ghost-1, namespace: default, labels: {kubernetes.io/service-name: ghost}}
addressType: IPv4
endpoints: [{addresses: [10.9.0.2]}]
---
apiVersion: v1
kind: Service
metadata: {name: names, namespace: default}
spec: {clusterIP: 10.96.0.30, ports: [{port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: names-1, namespace: default, labels: {kubernetes.io/service-name: names}}
addressType: FQDN
endpoints: [{addresses: [example.com]}]
`);
  assert.deepEqual(
    [...m.addresses.keys()].filter((k) => k.includes('/EndpointSlice/')),
    [],
  );
});

test('a pod an EndpointSlice lists by targetRef backs that Service, matched on namespace, name and uid, its named target ports resolved', () => {
  const m = model(`
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: shop, uid: u-1, labels: {app: db}}
spec: {containers: [{name: c, ports: [{name: pg, containerPort: 5432}]}]}
status: {phase: Running, podIP: 10.1.0.6}
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, namespace: shop, uid: u-2, labels: {app: db}}
status: {phase: Running, podIP: 10.1.0.7}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {clusterIP: 10.96.0.40, ports: [{name: sql, port: 5432, targetPort: pg}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: db-abc, namespace: shop, labels: {kubernetes.io/service-name: db}}
addressType: IPv4
endpoints:
- {addresses: [10.1.0.6], targetRef: {kind: Pod, namespace: shop, name: db-0, uid: u-1}}
- {addresses: [10.1.0.7], targetRef: {kind: Pod, namespace: shop, name: db-1, uid: an-earlier-pod}}
ports: [{name: sql, port: 5432, protocol: TCP}]
`);
  assert.deepEqual(wl(m, 'Kubernetes//Pod/shop/db-0').services, {
    'shop/db.shop.svc.cluster.local': [{ servicePort: 5432, targetPort: 5432 }],
  });
  assert.deepEqual(wl(m, 'Kubernetes//Pod/shop/db-1').services, {}, 'a targetRef with another uid is another pod');
  assert.deepEqual(
    [...m.addresses.keys()].filter((k) => k.includes('/EndpointSlice/')),
    [],
    'pod endpoints come from the pods themselves',
  );
});
