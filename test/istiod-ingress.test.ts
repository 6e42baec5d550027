import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Istiod } from '../src/istiod/istiod.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startIstiod } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { namespaces } from './helpers/manifests.js';
import { pythonSkip, runPython } from './helpers/python.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { waypointProtoPython } from './helpers/waypoint-proto-python.js';
import { tlsSecret } from './helpers/tls-secret.js';

const skip = kubectlSkip || pythonSkip('grpc', 'python3-grpcio') || pythonSkip('cryptography', 'python3-cryptography');

/** Plain Gateway API YAML: an ingress Gateway of class istio, its routes' namespace, and a route from there. */
const GATEWAY = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ingress}
spec:
  gatewayClassName: istio
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    allowedRoutes: {namespaces: {from: All}}
  - name: https
    port: 443
    protocol: HTTPS
    hostname: "*.example.com"
    tls: {mode: Terminate, certificateRefs: [{name: example-cert}]}
    allowedRoutes: {namespaces: {from: All}}
  - name: https-other
    port: 8443
    protocol: HTTPS
    hostname: other.test
    tls: {certificateRefs: [{name: other-cert, namespace: other}]}
  - name: tls-terminate
    port: 9443
    protocol: TLS
    tls: {mode: Terminate, certificateRefs: [{name: example-cert}]}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: app}
spec: {clusterIP: 10.96.0.20, selector: {app: echo}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: echo, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: ingress}]
  hostnames: [echo.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs: [{name: echo, port: 80}]
`;

/** A ReferenceGrant in `other` that lets Gateways of `ingress` use its Secrets. */
const GRANT = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: ingress-certs, namespace: other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: ingress}]
  to: [{group: "", kind: Secret}]
`;

/** A Role and RoleBinding that let the service account `reader` of `ingress` list Secrets there. */
const SECRET_READER = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: secret-reader, namespace: ingress}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get, watch, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: secret-reader, namespace: ingress}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: secret-reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: ingress}]
`;

/**
 * A Gateway of a TLS passthrough and a TCP listener, a TLSRoute to a Service that exists and a TCPRoute to one that
 * does not, both from `app`.
 */
const L4_ROUTES = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: l4, namespace: ingress}
spec:
  gatewayClassName: istio
  listeners:
  - name: tls
    port: 9443
    protocol: TLS
    hostname: "*.db.test"
    tls: {mode: Passthrough}
    allowedRoutes: {namespaces: {from: All}}
  - name: tcp
    port: 5432
    protocol: TCP
    allowedRoutes: {namespaces: {from: All}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: db, namespace: app}
spec:
  parentRefs: [{name: l4, namespace: ingress}]
  hostnames: [pg.db.test]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: raw, namespace: app}
spec:
  parentRefs: [{name: l4, namespace: ingress, sectionName: tcp}]
  rules: [{backendRefs: [{name: missing, port: 5432}]}]
`;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface GatewayJson {
  status?: {
    addresses?: { type: string; value: string }[];
    conditions?: Condition[];
    listeners?: { name: string; attachedRoutes: number; supportedKinds: { kind: string }[]; conditions: Condition[] }[];
  };
}

describe(
  'istiod deploys an ingress gateway for a Gateway of class istio and serves it its listeners and certificates',
  { skip },
  () => {
    let dir: string;
    let ist: Istiod;
    const { ok } = kubectlWith(() => ist.kubeconfigPath ?? '');
    const logs = new CapturedLogs('istiod');
    const apply = async (name: string, yaml: string): Promise<void> => {
      await writeFile(path.join(dir, name), yaml);
      await ok('apply', '-f', path.join(dir, name));
    };
    const gateway = async (): Promise<GatewayJson> =>
      JSON.parse(
        await ok('get', 'gateways.gateway.networking.k8s.io', '-n', 'ingress', 'gw', '-o', 'json'),
      ) as GatewayJson;
    const listener = (g: GatewayJson, name: string, type: string): Condition | undefined =>
      g.status?.listeners?.find((l) => l.name === name)?.conditions.find((c) => c.type === type);

    interface ListenerJson {
      name: string;
      port: number;
      protocol: string;
      hostname?: string;
      credentialNames?: string[];
      clientCaNames?: string[];
      virtualHosts?: { hostname: string; routes: Record<string, unknown>[] }[];
    }
    /** The listeners of proxy resource `name`, as python3-protobuf decodes them, once `ready` says they are all in. */
    const proxyListeners = async (
      serviceAccount: string,
      name: string,
      ready: (l: ListenerJson[]) => boolean,
    ): Promise<ListenerJson[]> => {
      const pydir = waypointProtoPython(await mkdtemp(path.join(dir, 'py-')));
      const [namespace = ''] = name.split('/');
      const token = await ist.issuer.issue({ namespace, serviceAccount, audience: 'istio-ca' });
      let listeners: ListenerJson[] = [];
      await waitFor(
        `the listeners of ${name}`,
        async () => {
          const py = await runPython('waypoint_ads_grpcio.py', [
            `127.0.0.1:${ist.ports.grpc}`,
            ist.rootCertPath,
            token,
            pydir,
            name,
          ]);
          assert.equal(py.status, 0, py.stderr);
          const out = JSON.parse(py.stdout) as { resources: { waypoint: { listeners?: ListenerJson[] } }[] };
          listeners = out.resources[0]?.waypoint.listeners ?? [];
          return ready(listeners);
        },
        20_000,
      );
      return listeners;
    };

    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'amesh-ingress-'));
      await mkdir(path.join(dir, 'config'));
      await writeFile(path.join(dir, 'config', 'mesh.yaml'), namespaces('ingress', 'app', 'other'));
      ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'), { logs: logs.control });
    });
    after(async () => {
      await ist?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    test('istiod creates the istio GatewayClass for its gateway controller, and accepts it', async () => {
      await ok('wait', '--for=condition=Accepted', 'gatewayclass/istio', '--timeout=20s');
      const cls = JSON.parse(await ok('get', 'gatewayclass', 'istio', '-o', 'json')) as {
        spec: { controllerName: string; description: string };
      };
      assert.deepEqual(cls.spec, {
        controllerName: 'istio.io/gateway-controller',
        description: 'The default Istio GatewayClass',
      });
    });

    test("the Gateway gets Istio's kube-gateway objects: <name>-istio, proxy router, a LoadBalancer Service of its listeners", async () => {
      await apply('gateway.yaml', GATEWAY);
      await ok('wait', '--for=create', '-n', 'ingress', 'deployment/gw-istio', '--timeout=20s');
      const list = JSON.parse(
        await ok(
          'get',
          'serviceaccount,deployment,service',
          '-n',
          'ingress',
          '-l',
          'gateway.networking.k8s.io/gateway-name=gw',
          '-o',
          'json',
        ),
      ) as {
        items: {
          kind: string;
          metadata: { name: string; labels: Record<string, string> };
          spec: Record<string, unknown>;
        }[];
      };
      assert.deepEqual(list.items.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
        'Deployment/gw-istio',
        'Service/gw-istio',
        'ServiceAccount/gw-istio',
      ]);
      const deployment = list.items.find((o) => o.kind === 'Deployment')!;
      assert.equal(deployment.metadata.labels['gateway.istio.io/managed'], 'istio.io-gateway-controller');
      const pod = deployment.spec['template'] as {
        metadata: { labels: Record<string, string> };
        spec: {
          serviceAccountName: string;
          securityContext: { sysctls: { name: string; value: string }[] };
          containers: { args: string[] }[];
        };
      };
      assert.equal(pod.metadata.labels['istio.io/dataplane-mode'], undefined, 'an ingress gateway is not opted out');
      assert.equal(pod.spec.serviceAccountName, 'gw-istio');
      assert.deepEqual(pod.spec.containers[0]!.args.slice(0, 2), ['proxy', 'router']);
      assert.deepEqual(pod.spec.securityContext.sysctls, [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }]);
      const svc = list.items.find((o) => o.kind === 'Service')!;
      assert.equal(svc.spec['type'], 'LoadBalancer');
      assert.deepEqual(
        (svc.spec['ports'] as { name: string; port: number; appProtocol: string }[]).map((p) => [
          p.name,
          p.port,
          p.appProtocol,
        ]),
        [
          ['status-port', 15021, 'tcp'],
          ['http', 80, 'http'],
          ['https', 443, 'https'],
          ['https-other', 8443, 'https'],
          ['tls-terminate', 9443, 'tls'],
        ],
      );
    });

    test('listener status: a missing Secret is InvalidCertificateRef, another namespace without a ReferenceGrant RefNotPermitted, a TLS listener in Terminate mode accepted with TLSRoutes and TCPRoutes', async () => {
      let g: GatewayJson = {};
      await waitFor(
        'listener statuses',
        async () => ((g = await gateway()).status?.listeners?.length ?? 0) === 4,
        20_000,
      );
      const http = g.status!.listeners!.find((l) => l.name === 'http')!;
      assert.equal(http.attachedRoutes, 1, 'the route in app attaches to the http listener (allowedRoutes All)');
      assert.deepEqual(
        http.supportedKinds.map((k) => k.kind),
        ['HTTPRoute', 'GRPCRoute'],
      );
      const https = listener(g, 'https', 'ResolvedRefs')!;
      assert.deepEqual([https.status, https.reason], ['False', 'InvalidCertificateRef']);
      assert.match(https.message, /secret ingress\/example-cert not found/);
      assert.equal(listener(g, 'https', 'Programmed')?.message, 'Bad TLS configuration');
      const other = listener(g, 'https-other', 'ResolvedRefs')!;
      assert.deepEqual([other.status, other.reason], ['False', 'RefNotPermitted']);
      assert.match(other.message, /missing a ReferenceGrant/);
      assert.equal(listener(g, 'tls-terminate', 'Accepted')?.status, 'True');
      assert.equal(listener(g, 'tls-terminate', 'ResolvedRefs')?.reason, 'InvalidCertificateRef');
      assert.deepEqual(
        g.status!.listeners!.find((l) => l.name === 'tls-terminate')!.supportedKinds.map((k) => k.kind),
        ['TLSRoute', 'TCPRoute'],
      );
      const accepted = g.status!.conditions!.find((c) => c.type === 'Accepted')!;
      assert.deepEqual([accepted.status, accepted.reason], ['True', 'ListenersNotValid']);
    });

    test('the Secret and a ReferenceGrant resolve the certificate references', async () => {
      await apply('example-cert.yaml', (await tlsSecret('ingress', 'example-cert', ['*.example.com'])).yaml);
      await apply('other-cert.yaml', (await tlsSecret('other', 'other-cert', ['other.test'])).yaml);
      await apply('grant.yaml', GRANT);
      await waitFor(
        'both HTTPS listeners and the TLS one ResolvedRefs',
        async () => {
          const g = await gateway();
          return ['https', 'https-other', 'tls-terminate'].every(
            (n) => listener(g, n, 'ResolvedRefs')?.status === 'True',
          );
        },
        20_000,
      );
    });

    test("no address while the LoadBalancer has none; then its address is the Gateway's", async () => {
      const programmed = (await gateway()).status?.conditions?.find((c) => c.type === 'Programmed');
      assert.equal(programmed?.status, 'False');
      assert.equal((await gateway()).status?.addresses, undefined);
      await apply(
        'slice.yaml',
        `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: gw-istio-x1, namespace: ingress, labels: {kubernetes.io/service-name: gw-istio}}
addressType: IPv4
endpoints: [{addresses: [10.1.0.9], conditions: {ready: true}}]
ports: [{name: http, port: 80, protocol: TCP}]
`,
      );
      await waitFor(
        'address pending',
        async () =>
          (await gateway()).status?.conditions?.find((c) => c.type === 'Programmed')?.message ===
          'Assigned to service(s) gw-istio.ingress.svc.cluster.local:80, gw-istio.ingress.svc.cluster.local:443, gw-istio.ingress.svc.cluster.local:8443, gw-istio.ingress.svc.cluster.local:9443, but failed to assign to all requested addresses: address pending for hostname "gw-istio.ingress.svc.cluster.local"',
        20_000,
      );
      await ok(
        'patch',
        '-n',
        'ingress',
        'service/gw-istio',
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"loadBalancer":{"ingress":[{"ip":"172.18.255.200"}]}}}',
      );
      await waitFor(
        'the load balancer address published',
        async () =>
          JSON.stringify((await gateway()).status?.addresses) === '[{"type":"IPAddress","value":"172.18.255.200"}]',
        20_000,
      );
      assert.equal((await gateway()).status?.conditions?.find((c) => c.type === 'Programmed')?.status, 'True');
    });

    test("the gateway's own resource, decoded by python3-protobuf: its listeners, virtual hosts and certificate names, a TLS listener in Terminate mode marked so", async () => {
      const listeners = await proxyListeners(
        'gw-istio',
        'ingress/gw-istio',
        (l) => l.find((x) => x.name === 'https-other')?.credentialNames !== undefined,
      );
      const echo = { namespace: 'app', hostname: 'echo.app.svc.cluster.local', port: 80, weight: 1 };
      const echoHost = [
        {
          hostname: 'echo.example.com',
          routes: [{ name: 'app/echo.0', matches: [{}], forward: { backends: [echo] } }],
        },
      ];
      assert.deepEqual(listeners, [
        {
          name: 'http',
          port: 80,
          protocol: 'HTTP',
          virtualHosts: echoHost,
        },
        {
          name: 'https',
          port: 443,
          protocol: 'HTTPS',
          hostname: '*.example.com',
          credentialNames: ['kubernetes-gateway://ingress/example-cert'],
          virtualHosts: echoHost,
        },
        {
          name: 'https-other',
          port: 8443,
          protocol: 'HTTPS',
          hostname: 'other.test',
          credentialNames: ['kubernetes-gateway://other/other-cert'],
        },
        {
          name: 'tls-terminate',
          port: 9443,
          protocol: 'TLS',
          credentialNames: ['kubernetes-gateway://ingress/example-cert'],
          terminate: true,
        },
      ]);
    });

    const sds = async (namespace: string, serviceAccount: string, ...names: string[]) => {
      const token = await ist.issuer.issue({ namespace, serviceAccount, audience: 'istio-ca' });
      const py = await runPython('sds_grpcio.py', [`127.0.0.1:${ist.ports.grpc}`, ist.rootCertPath, token, ...names]);
      assert.equal(py.status, 0, py.stderr);
      return JSON.parse(py.stdout) as {
        resources: {
          name: string;
          any_type: string;
          secret_name: string;
          dns_names?: string[];
          key_matches?: boolean;
          ca_dns_names?: string[];
        }[];
      };
    };

    test('SDS: the certificates istiod verified for the Gateway go to a proxy of its namespace, and to nobody else', async () => {
      const got = await sds(
        'ingress',
        'gw-istio',
        'kubernetes-gateway://ingress/example-cert',
        'kubernetes-gateway://other/other-cert',
        'kubernetes-gateway://other/not-referenced',
      );
      assert.deepEqual(
        got.resources.map((r) => [r.name, r.any_type, r.secret_name, r.dns_names, r.key_matches]).sort(),
        [
          [
            'kubernetes-gateway://ingress/example-cert',
            'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
            'kubernetes-gateway://ingress/example-cert',
            ['*.example.com'],
            true,
          ],
          [
            'kubernetes-gateway://other/other-cert',
            'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
            'kubernetes-gateway://other/other-cert',
            ['other.test'],
            true,
          ],
        ],
      );
      const elsewhere = await sds('app', 'default', 'kubernetes-gateway://ingress/example-cert');
      assert.deepEqual(elsewhere.resources, [], 'a proxy of another namespace gets nothing');
      assert.ok(logs.lines.some((l) => l['message'] === 'proxy attempted to access unauthorized certificates'));
    });

    test("SDS: an Istio Gateway's credentialName (kubernetes://) needs a SubjectAccessReview that lets the proxy list Secrets", async () => {
      const refused = await sds('ingress', 'gw-istio', 'kubernetes://example-cert');
      assert.deepEqual(refused.resources, [], 'gw-istio may not list Secrets: nothing is served');
      assert.ok(
        logs.lines.some(
          (l) =>
            l['message'] === 'proxy attempted to access unauthorized certificates' &&
            String(l['error']).startsWith('gw-istio/ingress is not authorized to read secrets'),
        ),
        JSON.stringify(
          logs.lines.filter((l) => l['message'] === 'proxy attempted to access unauthorized certificates'),
        ),
      );
      await apply('reader.yaml', SECRET_READER);
      const served = await sds('ingress', 'reader', 'kubernetes://example-cert', 'kubernetes://other/other-cert');
      assert.deepEqual(
        served.resources.map((r) => [r.name, r.dns_names]),
        [['kubernetes://example-cert', ['*.example.com']]],
        "allowed by the Role, and only from the proxy's own namespace",
      );
      // MUTUAL: the CA clients' certificates must chain to, as `<credentialName>-cacert`: the Secret's ca.crt.
      const clientCa = await tlsSecret('ingress', 'unused', ['client-ca.test']);
      const mtls = await tlsSecret('ingress', 'mtls-cert', ['mtls.example.com']);
      await apply(
        'mtls-cert.yaml',
        mtls.yaml.replace('\ndata: {', `\ndata: {ca.crt: ${Buffer.from(clientCa.certPem).toString('base64')}, `),
      );
      let cas: Awaited<ReturnType<typeof sds>> = { resources: [] };
      await waitFor(
        "istiod's informer has the new Secret",
        async () =>
          (cas = await sds('ingress', 'reader', 'kubernetes://mtls-cert-cacert', 'kubernetes://example-cert-cacert'))
            .resources.length > 0,
      );
      assert.deepEqual(
        cas.resources.map((r) => [r.name, r.secret_name, r.ca_dns_names]),
        [['kubernetes://mtls-cert-cacert', 'kubernetes://mtls-cert-cacert', ['client-ca.test']]],
        'a Secret without ca.crt gives no CA',
      );
      assert.ok(
        logs.lines.some(
          (l) =>
            l['message'] === 'SDS: failed to fetch ca certificate' &&
            String(l['error']).includes("didn't have expected keys cacert or ca.crt"),
        ),
      );
    });

    test("frontend TLS validation: a Gateway's caCertificateRef reaches its HTTPS listeners as the CA clients must chain to: a ConfigMap, which SDS serves as configmap:// to any caller, or (for one port) a Secret, served as kubernetes-gateway:// to that gateway only", async () => {
      const ca = await tlsSecret('ingress', 'unused', ['fe-client-ca.test']);
      await apply(
        'frontend.yaml',
        `apiVersion: v1
kind: ConfigMap
metadata: {name: client-ca, namespace: ingress}
data:
  ca.crt: |
${ca.certPem
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
---
apiVersion: v1
kind: Secret
metadata: {name: fe-ca, namespace: ingress}
data: {ca.crt: ${Buffer.from(ca.certPem).toString('base64')}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: fe, namespace: ingress}
spec:
  gatewayClassName: istio
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: fe.example.com, tls: {certificateRefs: [{name: example-cert}]}}
  - {name: alt, port: 8443, protocol: HTTPS, hostname: fe.example.com, tls: {certificateRefs: [{name: example-cert}]}}
  tls:
    frontend:
      default:
        validation: {caCertificateRefs: [{group: "", kind: ConfigMap, name: client-ca}]}
      perPort:
      - port: 8443
        tls: {validation: {caCertificateRefs: [{group: "", kind: Secret, name: fe-ca}]}}
`,
      );
      const listeners = await proxyListeners(
        'fe-istio',
        'ingress/fe-istio',
        (l) => l.length === 2 && l.every((x) => (x.clientCaNames ?? []).length > 0),
      );
      assert.deepEqual(
        listeners.map((l) => [l.name, l.credentialNames, l.clientCaNames]),
        [
          ['https', ['kubernetes-gateway://ingress/example-cert'], ['configmap://ingress/client-ca-cacert']],
          ['alt', ['kubernetes-gateway://ingress/example-cert'], ['kubernetes-gateway://ingress/fe-ca-cacert']],
        ],
      );
      let served: Awaited<ReturnType<typeof sds>> = { resources: [] };
      await waitFor(
        'the ConfigMap served as a CA',
        async () => (served = await sds('app', 'default', 'configmap://ingress/client-ca-cacert')).resources.length > 0,
      );
      assert.deepEqual(
        served.resources.map((r) => [r.name, r.ca_dns_names]),
        [['configmap://ingress/client-ca-cacert', ['fe-client-ca.test']]],
      );
      const secretCa = await sds('ingress', 'fe-istio', 'kubernetes-gateway://ingress/fe-ca-cacert');
      assert.deepEqual(
        secretCa.resources.map((r) => [r.name, r.ca_dns_names]),
        [['kubernetes-gateway://ingress/fe-ca-cacert', ['fe-client-ca.test']]],
        'a Secret CA its own Gateway names is served to that gateway',
      );
      const elsewhere = await sds('app', 'default', 'kubernetes-gateway://ingress/fe-ca-cacert');
      assert.deepEqual(elsewhere.resources, [], 'and to no proxy of another namespace');
    });

    test("TLSRoutes and TCPRoutes get the status of their Gateway parents, and count in their listeners' attachedRoutes", async () => {
      await apply('l4.yaml', L4_ROUTES);
      const parentConditions = async (resource: string): Promise<string[][]> => {
        const route = JSON.parse(await ok('get', resource, '-n', 'app', '-o', 'json')) as {
          status?: { parents?: { parentRef: { name: string }; controllerName: string; conditions: Condition[] }[] };
        };
        return (route.status?.parents ?? []).flatMap((p) =>
          p.conditions.map((c) => [p.parentRef.name, p.controllerName, c.type, c.status, c.reason, c.message]),
        );
      };
      let tls: string[][] = [];
      let tcp: string[][] = [];
      await waitFor(
        'both routes reported',
        async () =>
          (tls = await parentConditions('tlsroute/db')).length === 2 &&
          (tcp = await parentConditions('tcproute/raw')).length === 2,
        20_000,
      );
      assert.deepEqual(tls, [
        ['l4', 'istio.io/gateway-controller', 'Accepted', 'True', 'Accepted', 'Route was valid'],
        ['l4', 'istio.io/gateway-controller', 'ResolvedRefs', 'True', 'ResolvedRefs', 'All references resolved'],
      ]);
      assert.deepEqual(tcp, [
        ['l4', 'istio.io/gateway-controller', 'Accepted', 'True', 'Accepted', 'Route was valid'],
        [
          'l4',
          'istio.io/gateway-controller',
          'ResolvedRefs',
          'False',
          'BackendNotFound',
          'backend(missing.app.svc) not found',
        ],
      ]);
      let listeners: { name: string; attachedRoutes: number }[] = [];
      await waitFor(
        "the l4 Gateway's listener statuses",
        async () => {
          const g = JSON.parse(
            await ok('get', 'gateways.gateway.networking.k8s.io', '-n', 'ingress', 'l4', '-o', 'json'),
          ) as GatewayJson;
          listeners = (g.status?.listeners ?? []).map(({ name, attachedRoutes }) => ({ name, attachedRoutes }));
          return listeners.every((l) => l.attachedRoutes > 0) && listeners.length === 2;
        },
        20_000,
      );
      assert.deepEqual(listeners, [
        { name: 'tls', attachedRoutes: 1 },
        { name: 'tcp', attachedRoutes: 1 },
      ]);
    });

    test("Istio's own Gateway (v1alpha3) and VirtualService (v1beta1) give the proxies the Gateway selects listeners, with credentialName over SDS as kubernetes://, and a PASSTHROUGH server the VirtualService's tls routes by SNI", async () => {
      await apply(
        'istio-gateway.yaml',
        `apiVersion: v1
kind: Pod
metadata: {name: ingressgateway-0, namespace: ingress, labels: {istio: ingressgateway}}
spec: {containers: [{name: istio-proxy, image: amesh}]}
---
apiVersion: networking.istio.io/v1alpha3
kind: Gateway
metadata: {name: istio-gw, namespace: ingress}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["app/*.shop.test"]
    tls: {mode: SIMPLE, credentialName: example-cert}
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
  - port: {number: 9443, name: tls, protocol: TLS}
    hosts: ["*"]
    tls: {mode: PASSTHROUGH}
---
apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata: {name: shop, namespace: app}
spec:
  hosts: [www.shop.test]
  gateways: [ingress/istio-gw]
  http:
  - match: [{uri: {prefix: /api}}]
    rewrite: {uri: /v1}
    route: [{destination: {host: echo, port: {number: 80}}}]
  - route: [{destination: {host: echo}}]
  tls:
  - match: [{sniHosts: [www.shop.test], port: 9443}]
    route: [{destination: {host: echo, port: {number: 80}}}]
`,
      );
      const listeners = await proxyListeners('default', 'ingress/ingressgateway-0', (l) => l.length === 3);
      const echo = { backends: [{ namespace: 'app', hostname: 'echo.app.svc.cluster.local', port: 80, weight: 100 }] };
      const routes = [
        {
          name: 'app/shop.0',
          matches: [{ path: { stringPrefix: '/api' } }],
          forward: echo,
          rewrite: { path: { prefix: '/v1' } },
        },
        { name: 'app/shop.1', matches: [{}], forward: echo },
      ];
      assert.deepEqual(
        listeners.map(({ port, protocol, hostname, credentialNames, virtualHosts }) => ({
          port,
          protocol,
          hostname,
          credentialNames,
          virtualHosts,
        })),
        [
          {
            port: 443,
            protocol: 'HTTPS',
            hostname: '*.shop.test',
            credentialNames: ['kubernetes://example-cert'],
            virtualHosts: [{ hostname: 'www.shop.test', routes }],
          },
          {
            port: 80,
            protocol: 'HTTP',
            hostname: undefined,
            credentialNames: undefined,
            virtualHosts: [{ hostname: 'www.shop.test', routes }],
          },
          {
            port: 9443,
            protocol: 'TLS',
            hostname: undefined,
            credentialNames: undefined,
            virtualHosts: [{ hostname: 'www.shop.test', routes: [{ name: 'app/shop.tls.0', forward: echo }] }],
          },
        ],
      );
    });
  },
);
