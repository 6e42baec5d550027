import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Istiod } from '../src/istiod/istiod.js';
import { parse } from 'yaml';
import { ameshCommand } from '../src/up/amesh-command.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startIstiod } from './helpers/in-process.js';
import { runToExit } from './helpers/run-to-exit.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { namespaces } from './helpers/manifests.js';
import { adsFromPython } from './helpers/ads-grpcio.js';
import { pythonSkip, runPython } from './helpers/python.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { waypointProtoPython } from './helpers/waypoint-proto-python.js';

const skip = kubectlSkip || pythonSkip('grpc', 'python3-grpcio');

/** Plain Gateway API YAML, as `istioctl waypoint generate` writes it, and a Service that asks for the waypoint. */
const WAYPOINT = `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: waypoint
  namespace: backend
  labels: {istio.io/waypoint-for: service}
spec:
  gatewayClassName: istio-waypoint
  listeners:
  - name: mesh
    port: 15008
    protocol: HBONE
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: backend, labels: {istio.io/use-waypoint: waypoint}}
spec: {clusterIP: 10.96.0.10, selector: {app: echo}, ports: [{port: 80, targetPort: 8080}]}
`;

/** A header route to v2 with a timeout, and a DENY on DELETE /admin*, both as plain Gateway API and Istio YAML. */
const L7 = `
apiVersion: v1
kind: Service
metadata: {name: echo-v2, namespace: backend}
spec: {clusterIP: 10.96.0.11, selector: {app: echo, version: v2}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: echo, namespace: backend}
spec:
  parentRefs: [{group: "", kind: Service, name: echo}]
  rules:
  - matches: [{headers: [{name: X-Version, value: v2}]}]
    backendRefs: [{name: echo-v2, port: 80}]
    timeouts: {request: 2s}
  - backendRefs: [{name: echo, port: 80}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: no-admin-delete, namespace: backend}
spec:
  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: waypoint}]
  action: DENY
  rules: [{to: [{operation: {methods: [DELETE], paths: ["/admin*"]}}]}]
`;

/** The Waypoint resource as proto3 JSON (python3-protobuf's MessageToDict). */
interface WaypointJson {
  services?: unknown[];
  policies?: unknown[];
}

/** An EndpointSlice of Service `svc` in backend with one ready endpoint, as the controllers write for a ready pod. */
const readySlice = (svc: string, ip: string): string => `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${svc}-x1, namespace: backend, labels: {kubernetes.io/service-name: ${svc}}}
addressType: IPv4
endpoints: [{addresses: [${ip}], conditions: {ready: true}}]
ports: [{name: mesh, port: 15008, protocol: TCP}]
`;

describe('istiod deploys a waypoint for a Gateway of class istio-waypoint and binds what uses it', { skip }, () => {
  let dir: string;
  let ist: Istiod;
  const { ok } = kubectlWith(() => ist.kubeconfigPath ?? '');
  const logs = new CapturedLogs('istiod');
  /** The Services istiod serves, decoded by python3-grpcio from the wire. */
  const services = async (): Promise<{ hostname?: unknown; waypoint?: unknown; app_protocols?: unknown }[]> =>
    (await adsFromPython(ist)).services;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-waypoint-'));
    await mkdir(path.join(dir, 'config'));
    await writeFile(path.join(dir, 'config', 'mesh.yaml'), namespaces('backend') + WAYPOINT);
    ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'), { logs: logs.control });
  });
  after(async () => {
    await ist?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('istiod creates the istio-waypoint GatewayClass for its mesh controller, and accepts it', async () => {
    await ok('wait', '--for=condition=Accepted', 'gatewayclass/istio-waypoint', '--timeout=20s');
    const cls = JSON.parse(await ok('get', 'gatewayclass', 'istio-waypoint', '-o', 'json')) as {
      spec: { controllerName: string };
    };
    assert.equal(cls.spec.controllerName, 'istio.io/mesh-controller');
    const table = (await ok('get', 'gatewayclass', 'istio-waypoint')).trim().split('\n');
    assert.deepEqual(
      table.map((l) => l.split(/\s+/).slice(0, 3)),
      [
        ['NAME', 'CONTROLLER', 'ACCEPTED'],
        ['istio-waypoint', 'istio.io/mesh-controller', 'True'],
      ],
    );
  });

  test("the Gateway gets Istio's waypoint ServiceAccount, Deployment and Service, owned by it", async () => {
    await ok(
      'wait',
      '--for=condition=Accepted',
      '-n',
      'backend',
      'gateways.gateway.networking.k8s.io/waypoint',
      '--timeout=20s',
    );
    const list = JSON.parse(
      await ok(
        'get',
        'serviceaccount,deployment,service',
        '-n',
        'backend',
        '-l',
        'gateway.networking.k8s.io/gateway-name=waypoint',
        '-o',
        'json',
      ),
    ) as {
      items: {
        kind: string;
        metadata: { name: string; labels: Record<string, string>; ownerReferences: { kind: string; name: string }[] };
        spec: Record<string, unknown>;
      }[];
    };
    assert.deepEqual(list.items.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
      'Deployment/waypoint',
      'Service/waypoint',
      'ServiceAccount/waypoint',
    ]);
    for (const o of list.items) {
      assert.equal(o.metadata.labels['gateway.istio.io/managed'], 'istio.io-mesh-controller');
      assert.equal(o.metadata.labels['gateway.networking.k8s.io/gateway-class-name'], 'istio-waypoint');
      assert.equal(o.metadata.labels['istio.io/waypoint-for'], 'service', "the Gateway's labels are copied");
      assert.deepEqual(
        o.metadata.ownerReferences.map((r) => `${r.kind}/${r.name}`),
        ['Gateway/waypoint'],
      );
    }
    const svc = list.items.find((o) => o.kind === 'Service')!;
    assert.deepEqual(
      (svc.spec['ports'] as { name: string; port: number; appProtocol: string }[]).map((p) => [
        p.name,
        p.port,
        p.appProtocol,
      ]),
      [
        ['status-port', 15021, 'tcp'],
        ['mesh', 15008, 'hbone'],
      ],
    );
    const pod = list.items.find((o) => o.kind === 'Deployment')!.spec['template'] as {
      metadata: { labels: Record<string, string> };
      spec: { serviceAccountName: string; containers: { args: string[] }[] };
    };
    assert.equal(pod.metadata.labels['istio.io/dataplane-mode'], 'none', 'the waypoint itself is not captured');
    assert.equal(pod.spec.serviceAccountName, 'waypoint');
    assert.deepEqual(pod.spec.containers[0]!.args.slice(0, 2), ['proxy', 'waypoint']);
  });

  test('no pod behind the waypoint yet: not Programmed, no address, and nothing bound to it', async () => {
    const gw = JSON.parse(
      await ok('get', 'gateways.gateway.networking.k8s.io', '-n', 'backend', 'waypoint', '-o', 'json'),
    ) as {
      status: {
        addresses?: unknown[];
        conditions: { type: string; status: string; reason: string; message: string }[];
      };
    };
    const programmed = gw.status.conditions.find((c) => c.type === 'Programmed');
    assert.deepEqual(programmed && [programmed.status, programmed.reason, programmed.message], [
      'False',
      'AddressNotAssigned',
      'Failed to assign to any requested addresses: no instances found for hostname "waypoint.backend.svc.cluster.local"',
    ]);
    assert.equal(gw.status.addresses, undefined);
    assert.equal((await services()).find((s) => s.hostname === 'echo.backend.svc.cluster.local')?.waypoint, undefined);
  });

  test("once its pod is a ready endpoint, the Gateway's status publishes the Service's IP and hostname, and the bound Service is served with the waypoint", async () => {
    await writeFile(path.join(dir, 'slice.yaml'), readySlice('waypoint', '10.1.0.9'));
    await ok('apply', '-f', path.join(dir, 'slice.yaml'));
    await ok(
      'wait',
      '--for=condition=Programmed',
      '-n',
      'backend',
      'gateways.gateway.networking.k8s.io/waypoint',
      '--timeout=20s',
    );
    const gw = JSON.parse(
      await ok('get', 'gateways.gateway.networking.k8s.io', '-n', 'backend', 'waypoint', '-o', 'json'),
    ) as {
      status: { addresses: { type: string; value: string }[] };
    };
    assert.deepEqual(
      gw.status.addresses.map((a) => a.type),
      ['IPAddress', 'Hostname'],
    );
    assert.equal(gw.status.addresses[1]!.value, 'waypoint.backend.svc.cluster.local');
    // kubectl get prints the CRDs' columns: the first address, and Programmed.
    const table = (await ok('get', 'gateways.gateway.networking.k8s.io', '-n', 'backend')).trim().split('\n');
    assert.deepEqual(table[0]!.split(/\s+/), ['NAME', 'CLASS', 'ADDRESS', 'PROGRAMMED', 'AGE']);
    assert.deepEqual(table[1]!.split(/\s+/).slice(0, 4), [
      'waypoint',
      'istio-waypoint',
      gw.status.addresses[0]!.value,
      'True',
    ]);
    const r = { services: await services() };
    assert.deepEqual(r.services.find((s) => s.hostname === 'echo.backend.svc.cluster.local')?.waypoint, {
      namespace: 'backend',
      hostname: 'waypoint.backend.svc.cluster.local',
      hbone_mtls_port: 15008,
    });
    assert.equal(r.services.find((s) => s.hostname === 'waypoint.backend.svc.cluster.local')?.waypoint, undefined);
    // The waypoint Service's ports as Istio types them: status-port's appProtocol tcp is TCP (4), hbone is none.
    assert.deepEqual(
      r.services.find((s) => s.hostname === 'waypoint.backend.svc.cluster.local')?.app_protocols,
      [4, 0],
    );
  });

  /** The waypoint resources `names` as python3-protobuf decodes them, subscribed to with a token for `namespace`. */
  const waypointFromPython = async (
    namespace: string,
    ...names: string[]
  ): Promise<{ removed: string[]; resources: { name: string; any_type: string; waypoint: WaypointJson }[] }> => {
    const token = await ist.issuer.issue({ namespace, serviceAccount: 'waypoint', audience: 'istio-ca' });
    const pydir = waypointProtoPython(await mkdtemp(path.join(dir, 'py-')));
    const py = await runPython('waypoint_ads_grpcio.py', [
      `127.0.0.1:${ist.ports.grpc}`,
      ist.rootCertPath,
      token,
      pydir,
      ...names,
    ]);
    assert.equal(py.status, 0, py.stderr);
    return JSON.parse(py.stdout) as Awaited<ReturnType<typeof waypointFromPython>>;
  };

  test("kubectl-applied HTTPRoute and AuthorizationPolicy reach the bound waypoint's own resource, decoded by python3-protobuf, and only its namespace gets it", async () => {
    await writeFile(path.join(dir, 'l7.yaml'), L7);
    await ok('apply', '-f', path.join(dir, 'l7.yaml'));
    let got: Awaited<ReturnType<typeof waypointFromPython>> | undefined;
    await waitFor(
      'the waypoint resource with routes and a policy',
      async () => {
        got = await waypointFromPython('backend', 'backend/waypoint');
        const w = got.resources[0]?.waypoint;
        return (w?.services?.length ?? 0) > 0 && (w?.policies?.length ?? 0) > 0;
      },
      20_000,
    );
    const r = got!.resources[0]!;
    assert.equal(r.any_type, 'type.googleapis.com/amesh.waypoint.v1.Waypoint');
    assert.equal(r.name, 'backend/waypoint');
    assert.deepEqual(r.waypoint.services, [
      {
        namespace: 'backend',
        hostname: 'echo.backend.svc.cluster.local',
        routes: [
          {
            name: 'backend/echo.0',
            matches: [{ headers: [{ name: 'x-version', exact: 'v2' }] }],
            forward: {
              backends: [{ namespace: 'backend', hostname: 'echo-v2.backend.svc.cluster.local', port: 80, weight: 1 }],
            },
            timeout: '2s',
          },
          {
            name: 'backend/echo.1',
            matches: [{}],
            forward: {
              backends: [{ namespace: 'backend', hostname: 'echo.backend.svc.cluster.local', port: 80, weight: 1 }],
            },
          },
        ],
      },
    ]);
    assert.deepEqual(r.waypoint.policies, [
      {
        name: 'backend/no-admin-delete',
        action: 'DENY',
        rules: [{ to: [{ methods: [{ exact: 'DELETE' }], paths: [{ prefix: '/admin' }] }] }],
      },
    ]);
    // A caller of another namespace is refused the name: nothing is sent.
    const other = await waypointFromPython('default', 'backend/waypoint');
    assert.deepEqual(other.resources, []);
    assert.ok(logs.lines.some((l) => l['message'] === 'xDS subscription to resources of another namespace refused'));
  });

  test("istiod reports the mesh routes' status as Istio's controller does: Accepted, ResolvedRefs and ResolvedWaypoints per Service parent, with the reason when a parent or backend is missing", async () => {
    type Parents = {
      parentRef: { name: string };
      controllerName: string;
      conditions: { type: string; status: string; reason: string; message: string }[];
    }[];
    const parents = async (name: string): Promise<Parents> =>
      (
        JSON.parse(await ok('get', 'httproutes', '-n', 'backend', name, '-o', 'json')) as {
          status: { parents: Parents };
        }
      ).status.parents;
    const conds = (p: Parents): string[][] =>
      p.flatMap((x) =>
        x.conditions.map((c) => [x.parentRef.name, x.controllerName, c.type, c.status, c.reason, c.message]),
      );
    let echo: string[][] = [];
    await waitFor(
      'the route reported',
      async () => (echo = conds((await parents('echo')) ?? [])).length === 3,
      20_000,
    ).catch(() => assert.fail(JSON.stringify(echo)));
    assert.deepEqual(echo, [
      ['echo', 'istio.io/gateway-controller', 'Accepted', 'True', 'Accepted', 'Route was valid'],
      ['echo', 'istio.io/gateway-controller', 'ResolvedRefs', 'True', 'ResolvedRefs', 'All references resolved'],
      [
        'echo',
        'istio.io/gateway-controller',
        'ResolvedWaypoints',
        'True',
        'ResolvedWaypoints',
        'All waypoints resolved',
      ],
    ]);
    await writeFile(
      path.join(dir, 'broken-route.yaml'),
      `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broken, namespace: backend}
spec:
  parentRefs: [{group: "", kind: Service, name: echo-v2}, {group: "", kind: Service, name: nowhere}]
  rules: [{backendRefs: [{name: gone, port: 80}]}]
`,
    );
    await ok('apply', '-f', path.join(dir, 'broken-route.yaml'));
    let got: string[][] = [];
    await waitFor(
      'the broken route reported',
      async () => (got = conds(await parents('broken').catch(() => []))).length === 6,
      20_000,
    );
    assert.deepEqual(got, [
      ['echo-v2', 'istio.io/gateway-controller', 'Accepted', 'True', 'Accepted', 'Route was valid'],
      [
        'echo-v2',
        'istio.io/gateway-controller',
        'ResolvedRefs',
        'False',
        'BackendNotFound',
        'backend(gone.backend.svc) not found',
      ],
      [
        'echo-v2',
        'istio.io/gateway-controller',
        'ResolvedWaypoints',
        'True',
        'ResolvedWaypoints',
        'istio.io/use-waypoint label missing from parent and parent namespace; in ambient mode, route will not be respected',
      ],
      [
        'nowhere',
        'istio.io/gateway-controller',
        'Accepted',
        'False',
        'NoMatchingParent',
        'parent service: "nowhere" not found',
      ],
      [
        'nowhere',
        'istio.io/gateway-controller',
        'ResolvedRefs',
        'False',
        'BackendNotFound',
        'backend(gone.backend.svc) not found',
      ],
      [
        'nowhere',
        'istio.io/gateway-controller',
        'ResolvedWaypoints',
        'True',
        'ResolvedWaypoints',
        'istio.io/use-waypoint label missing from parent and parent namespace; in ambient mode, route will not be respected',
      ],
    ]);
    await ok('delete', '-f', path.join(dir, 'broken-route.yaml'));
  });

  test('what the Gateway owns is kept as the template says: not patched while it matches, put back when edited or deleted', async () => {
    const updated = (): number => logs.lines.filter((l) => l['message'] === 'updated to the waypoint template').length;
    assert.equal(updated(), 0, 'objects the API server defaulted still match the template');
    const image = await ok(
      'get',
      'deployment',
      '-n',
      'backend',
      'waypoint',
      '-o',
      'jsonpath={.spec.template.spec.containers[0].image}',
    );
    await ok('set', 'image', '-n', 'backend', 'deployment/waypoint', 'istio-proxy=example.com/other:1');
    await ok(
      'wait',
      '-n',
      'backend',
      'deployment/waypoint',
      `--for=jsonpath={.spec.template.spec.containers[0].image}=${image}`,
      '--timeout=20s',
    );
    await ok('delete', 'serviceaccount', '-n', 'backend', 'waypoint');
    await ok('wait', '-n', 'backend', 'serviceaccount/waypoint', '--for=create', '--timeout=20s');
  });

  const amesh = async (...args: string[]): Promise<string> => {
    const { cmd, args: base } = ameshCommand();
    const r = await runToExit(cmd, [...base, ...args, '--kubeconfig', ist.kubeconfigPath ?? ''], 60_000);
    assert.equal(r.status, 0, `amesh ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  test("amesh waypoint generate writes istioctl's Gateway: class istio-waypoint, HBONE on 15008, istio.io/waypoint-for only when --for is given", async () => {
    assert.deepEqual(parse(await amesh('waypoint', 'generate', '-n', 'backend', '--for', 'all')), {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'waypoint', namespace: 'backend', labels: { 'istio.io/waypoint-for': 'all' } },
      spec: { gatewayClassName: 'istio-waypoint', listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }] },
    });
    assert.deepEqual(
      (parse(await amesh('waypoint', 'generate')) as { metadata: Record<string, unknown> }).metadata,
      { name: 'waypoint' },
      'without -n the namespace is left out, for kubectl apply -n to choose',
    );
  });

  test('amesh waypoint apply --enroll-namespace --wait, list, status and delete, as istioctl waypoint', async () => {
    await writeFile(path.join(dir, 'shared-slice.yaml'), readySlice('shared', '10.1.0.10'));
    await ok('apply', '-f', path.join(dir, 'shared-slice.yaml'));
    const applied = await amesh(
      'waypoint',
      'apply',
      '-n',
      'backend',
      '--name',
      'shared',
      '--for',
      'workload',
      '--enroll-namespace',
      '--wait',
    );
    assert.deepEqual(applied.trim().split('\n'), [
      '⚠️ Warning: namespace is not enrolled in ambient. Consider running\t`kubectl label namespace backend istio.io/dataplane-mode=ambient`',
      '✅ waypoint backend/shared applied',
      '✅ waypoint backend/shared is ready!',
      '✅ namespace backend labeled with "istio.io/use-waypoint: shared"',
    ]);
    assert.equal(
      await ok('get', 'namespace', 'backend', '-o', 'jsonpath={.metadata.labels.istio\\.io/use-waypoint}'),
      'shared',
    );
    assert.deepEqual(
      (await amesh('waypoint', 'list', '-n', 'backend'))
        .trim()
        .split('\n')
        .map((l) => l.split(/\s{2,}/)),
      [
        ['NAME', 'REVISION', 'TRAFFIC TYPE', 'PROGRAMMED'],
        ['shared', 'default', 'workload', 'True'],
        ['waypoint', 'default', 'service', 'True'],
      ],
    );
    const status = (await amesh('waypoint', 'status', '-n', 'backend'))
      .trim()
      .split('\n')
      .map((l) => l.split(/\s{2,}/));
    assert.deepEqual(status[0], ['NAME', 'STATUS', 'TYPE', 'REASON', 'MESSAGE']);
    assert.ok(
      status.some((r) => r[0] === 'shared' && r[1] === 'True' && r[2] === 'Programmed'),
      JSON.stringify(status),
    );
    assert.equal(await amesh('waypoint', 'delete', 'shared', '-n', 'backend'), 'waypoint backend/shared deleted\n');
    assert.equal(await amesh('waypoint', 'delete', 'shared', '-n', 'backend'), 'waypoint backend/shared not found\n');
    const again = await amesh('waypoint', 'apply', '-n', 'backend', '--name', 'shared', '--enroll-namespace');
    assert.match(again, /already has an enrolled Waypoint\. Consider adding the `--overwrite` flag/);
  });
});
