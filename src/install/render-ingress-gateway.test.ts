import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { VERSION } from '../lib/version.js';
import type { RenderedObject } from './chart-helpers.js';
import { generateManifest } from './generate-manifest.js';
import type { InputFile } from './istio-operator.js';
import { parseSetFlag } from './set-flag.js';
import { at } from './value-tree.js';

const generate = (sets: string[], files: InputFile[] = []) => generateManifest({ files, sets: sets.map(parseSetFlag) });
/** The objects of the IngressGateways component. */
function gatewayObjects(sets: string[], files: InputFile[] = []): readonly RenderedObject[] {
  return generate(sets, files).sets.find((s) => s.component.name === 'IngressGateways')?.objects ?? [];
}
function find(all: readonly RenderedObject[], kind: string, name: string, namespace = 'istio-system'): RenderedObject {
  const o = all.find((x) => x.kind === kind && x.metadata.name === name && x.metadata.namespace === namespace);
  assert.ok(o, `${kind} ${namespace}/${name} is rendered`);
  return o;
}
const container = (o: RenderedObject): Record<string, unknown> =>
  (at(o, 'spec.template.spec.containers') as Record<string, unknown>[])[0]!;
const env = (o: RenderedObject): Record<string, unknown> =>
  Object.fromEntries(
    (container(o)['env'] as { name: string; value?: string; valueFrom?: unknown }[]).map((e) => [
      e.name,
      e.value ?? e.valueFrom,
    ]),
  );

test('the default profile renders istioctl’s istio-ingressgateway objects in istio-system, named and labelled as the chart', () => {
  const all = gatewayObjects([]);
  assert.deepEqual(all.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`).sort(), [
    'Deployment/istio-system/istio-ingressgateway',
    'HorizontalPodAutoscaler/istio-system/istio-ingressgateway',
    'Role/istio-system/istio-ingressgateway-sds',
    'RoleBinding/istio-system/istio-ingressgateway-sds',
    'Service/istio-system/istio-ingressgateway',
    'ServiceAccount/istio-system/istio-ingressgateway-service-account',
  ]);
  const d = find(all, 'Deployment', 'istio-ingressgateway');
  const selector = { app: 'istio-ingressgateway', istio: 'ingressgateway' };
  assert.deepEqual(at(d, 'spec.selector.matchLabels'), selector);
  assert.equal(at(d, 'spec.replicas'), undefined, 'the HPA scales it');
  assert.deepEqual(at(d, 'metadata.labels'), {
    ...selector,
    release: 'istio',
    'istio.io/rev': 'default',
    'install.operator.istio.io/owning-resource': 'unknown',
    'operator.istio.io/component': 'IngressGateways',
    'app.kubernetes.io/name': 'istio-ingressgateway',
    'istio.io/dataplane-mode': 'none',
    'app.kubernetes.io/managed-by': 'Helm',
    'app.kubernetes.io/instance': 'istio',
    'app.kubernetes.io/part-of': 'istio',
    'app.kubernetes.io/version': VERSION,
    'helm.sh/chart': `istio-ingress-${VERSION}`.replaceAll('+', '_'),
  });
  const podLabels = at(d, 'spec.template.metadata.labels') as Record<string, string>;
  assert.equal(podLabels['istio'], 'ingressgateway', 'Istio Gateways with selector istio: ingressgateway pick it');
  assert.equal(podLabels['app'], 'istio-ingressgateway');
  assert.equal(podLabels['istio.io/dataplane-mode'], 'none', 'not captured by ztunnel');
  assert.equal(podLabels['sidecar.istio.io/inject'], 'false');
  assert.equal(podLabels['service.istio.io/canonical-name'], 'istio-ingressgateway');
  assert.equal(podLabels['service.istio.io/canonical-revision'], 'latest');
  assert.equal(podLabels['chart'], 'gateways', 'istio-system pods carry the chart’s Helm 2 labels');
  assert.deepEqual(at(d, 'spec.template.metadata.annotations'), {
    'istio.io/rev': 'default',
    'prometheus.io/port': '15020',
    'prometheus.io/scrape': 'true',
    'prometheus.io/path': '/stats/prometheus',
    'sidecar.istio.io/inject': 'false',
  });
  assert.equal(at(d, 'spec.template.spec.serviceAccountName'), 'istio-ingressgateway-service-account');
  assert.deepEqual(at(d, 'spec.template.spec.securityContext'), {
    runAsUser: 1337,
    runAsGroup: 1337,
    runAsNonRoot: true,
  });
  assert.equal(at(d, 'spec.template.spec.affinity'), undefined, 'no empty node affinity');
});

test('the gateway container runs amesh’s router with the chart’s arguments, environment, ports, probe and mounts', () => {
  const d = find(gatewayObjects([]), 'Deployment', 'istio-ingressgateway');
  const c = container(d);
  assert.equal(c['name'], 'istio-proxy');
  assert.equal(c['image'], `localhost/amesh:${VERSION}`);
  assert.deepEqual(c['command'], ['amesh']);
  assert.deepEqual(c['args'], [
    'proxy',
    'router',
    '--domain',
    '$(POD_NAMESPACE).svc.cluster.local',
    '--proxyLogLevel=warning',
    '--proxyComponentLogLevel=misc:error',
    '--log_output_level=default:info',
  ]);
  assert.deepEqual(c['ports'], [
    { containerPort: 15021, protocol: 'TCP' },
    { containerPort: 8080, protocol: 'TCP' },
    { containerPort: 8443, protocol: 'TCP' },
    { containerPort: 15090, protocol: 'TCP', name: 'http-envoy-prom' },
  ]);
  const e = env(d);
  assert.equal(e['ISTIO_META_WORKLOAD_NAME'], 'istio-ingressgateway');
  assert.equal(
    e['ISTIO_META_OWNER'],
    'kubernetes://apis/apps/v1/namespaces/istio-system/deployments/istio-ingressgateway',
  );
  assert.equal(e['CA_ADDR'], 'istiod.istio-system.svc:15012');
  assert.equal(e['PROXY_CONFIG'], '{"discoveryAddress":"istiod.istio-system.svc:15012"}');
  assert.equal(e['PILOT_CERT_PROVIDER'], 'istiod');
  assert.equal(e['TRUST_DOMAIN'], 'cluster.local');
  assert.equal(e['ISTIO_META_MESH_ID'], 'cluster.local');
  assert.equal(e['ISTIO_META_CLUSTER_ID'], 'Kubernetes');
  assert.equal(e['ISTIO_META_UNPRIVILEGED_POD'], 'true');
  assert.deepEqual(e['POD_NAME'], { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } });
  assert.deepEqual(e['POD_NAMESPACE'], { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } });
  assert.deepEqual(e['INSTANCE_IP'], { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } });
  assert.deepEqual(c['securityContext'], {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    privileged: false,
    readOnlyRootFilesystem: true,
  });
  assert.deepEqual(at(c, 'readinessProbe.httpGet'), { path: '/healthz/ready', port: 15021, scheme: 'HTTP' });
  assert.deepEqual(c['resources'], {
    limits: { cpu: '2000m', memory: '1024Mi' },
    requests: { cpu: '100m', memory: '128Mi' },
  });
  const mounts = Object.fromEntries(
    (c['volumeMounts'] as { name: string; mountPath: string }[]).map((m) => [m.name, m.mountPath]),
  );
  assert.equal(mounts['istio-token'], '/var/run/secrets/tokens');
  assert.equal(mounts['istiod-ca-cert'], '/var/run/secrets/istio');
  const volumes = at(d, 'spec.template.spec.volumes') as { name: string }[];
  assert.deepEqual(
    at(
      volumes.find((v) => v.name === 'istio-token'),
      'projected.sources.0.serviceAccountToken',
    ),
    { path: 'istio-token', expirationSeconds: 43200, audience: 'istio-ca' },
  );
  assert.deepEqual(
    at(
      volumes.find((v) => v.name === 'istiod-ca-cert'),
      'configMap',
    ),
    { name: 'istio-ca-root-cert' },
  );
});

test('the Service is a LoadBalancer with the chart’s ports; the Role lets the gateway’s account read its namespace’s Secrets', () => {
  const all = gatewayObjects([]);
  const svc = find(all, 'Service', 'istio-ingressgateway');
  assert.equal(at(svc, 'spec.type'), 'LoadBalancer');
  assert.deepEqual(at(svc, 'spec.selector'), { app: 'istio-ingressgateway', istio: 'ingressgateway' });
  assert.deepEqual(at(svc, 'spec.ports'), [
    { port: 15021, targetPort: 15021, name: 'status-port', protocol: 'TCP' },
    { port: 80, targetPort: 8080, name: 'http2', protocol: 'TCP' },
    { port: 443, targetPort: 8443, name: 'https', protocol: 'TCP' },
  ]);
  assert.equal(at(svc, 'metadata.annotations'), undefined);
  assert.deepEqual(find(all, 'Role', 'istio-ingressgateway-sds')['rules'], [
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'watch', 'list'] },
  ]);
  const binding = find(all, 'RoleBinding', 'istio-ingressgateway-sds');
  assert.deepEqual(binding['roleRef'], {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'Role',
    name: 'istio-ingressgateway-sds',
  });
  assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: 'istio-ingressgateway-service-account' }]);
  const hpa = find(all, 'HorizontalPodAutoscaler', 'istio-ingressgateway');
  assert.equal(at(hpa, 'spec.minReplicas'), 1);
  assert.equal(at(hpa, 'spec.maxReplicas'), 5);
  assert.deepEqual(at(hpa, 'spec.scaleTargetRef'), {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: 'istio-ingressgateway',
  });
  assert.equal(at(hpa, 'spec.metrics.0.resource.target.averageUtilization'), 80);
});

test('the ambient, minimal and empty profiles render no gateway; enabling the listed entry renders it', () => {
  for (const profile of ['ambient', 'minimal', 'empty'])
    assert.deepEqual(gatewayObjects([`profile=${profile}`]), [], profile);
  for (const profile of ['minimal', 'empty', 'ambient']) {
    const all = gatewayObjects([`profile=${profile}`, 'components.ingressGateways[0].enabled=true']);
    find(all, 'Deployment', 'istio-ingressgateway');
    find(all, 'Service', 'istio-ingressgateway');
  }
  find(
    gatewayObjects(['profile=empty', 'values.gateways.istio-ingressgateway.enabled=true']),
    'Deployment',
    'istio-ingressgateway',
  );
  assert.deepEqual(gatewayObjects(['components.ingressGateways[0].enabled=false']), []);
});

test('an entry’s name, namespace, label and k8s settings make a second gateway, in the one IngressGateways set', () => {
  const { sets } = generate(
    [],
    [
      {
        name: 'iop.yaml',
        text: `
spec:
  components:
    ingressGateways:
    - name: istio-ingressgateway
      enabled: true
    - name: internal-gateway
      namespace: istio-ingress
      label: {istio: internal}
      k8s:
        env: [{name: EXTRA, value: "1"}]
        hpaSpec: {minReplicas: 2, maxReplicas: 3}
        service:
          type: ClusterIP
          ports:
          - {name: http, port: 80, targetPort: 8081}
        serviceAnnotations: {a: b}
`,
      },
    ],
  );
  assert.equal(sets.filter((s) => s.component.name === 'IngressGateways').length, 1);
  const all = sets.find((s) => s.component.name === 'IngressGateways')!.objects;
  find(all, 'Deployment', 'istio-ingressgateway');
  const d = find(all, 'Deployment', 'internal-gateway', 'istio-ingress');
  assert.deepEqual(at(d, 'spec.selector.matchLabels'), { app: 'istio-ingressgateway', istio: 'internal' });
  assert.equal(env(d)['ISTIO_META_WORKLOAD_NAME'], 'internal-gateway');
  assert.equal(env(d)['EXTRA'], '1');
  assert.equal(
    (at(d, 'spec.template.metadata.labels') as Record<string, string>)['chart'],
    undefined,
    'the Helm 2 labels only in istio-system',
  );
  assert.deepEqual(container(d)['ports'], [
    { containerPort: 8081, protocol: 'TCP' },
    { containerPort: 15090, protocol: 'TCP', name: 'http-envoy-prom' },
  ]);
  const svc = find(all, 'Service', 'internal-gateway', 'istio-ingress');
  assert.equal(at(svc, 'spec.type'), 'ClusterIP');
  assert.deepEqual(at(svc, 'spec.ports'), [{ name: 'http', port: 80, targetPort: 8081 }]);
  assert.deepEqual(at(svc, 'metadata.annotations'), { a: 'b' });
  assert.equal(at(find(all, 'HorizontalPodAutoscaler', 'internal-gateway', 'istio-ingress'), 'spec.minReplicas'), 2);
  assert.deepEqual(at(find(all, 'PodDisruptionBudget', 'internal-gateway', 'istio-ingress'), 'spec'), {
    minAvailable: 1,
    selector: { matchLabels: { app: 'istio-ingressgateway', istio: 'internal' } },
  });
  assert.deepEqual(find(all, 'RoleBinding', 'internal-gateway-sds', 'istio-ingress')['subjects'], [
    { kind: 'ServiceAccount', name: 'internal-gateway-service-account' },
  ]);
  assert.equal(
    all.some((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'istio-ingressgateway'),
    false,
  );
});

test('values.gateways.istio-ingressgateway settings reach every ingress gateway', () => {
  const all = gatewayObjects([
    'revision=canary',
    'values.global.hub=registry.example',
    'values.global.tag=1.2.3',
    'values.gateways.istio-ingressgateway.type=NodePort',
    'values.gateways.istio-ingressgateway.autoscaleEnabled=false',
    'values.gateways.istio-ingressgateway.replicaCount=2',
    'values.gateways.istio-ingressgateway.nodeSelector.disk=ssd',
    'values.global.logAsJson=true',
  ]);
  const d = find(all, 'Deployment', 'istio-ingressgateway');
  assert.equal(container(d)['image'], 'registry.example/amesh:1.2.3');
  assert.equal(at(d, 'spec.replicas'), 2);
  assert.equal(env(d)['CA_ADDR'], 'istiod-canary.istio-system.svc:15012');
  assert.equal((at(d, 'metadata.labels') as Record<string, string>)['istio.io/rev'], 'canary');
  assert.ok((container(d)['args'] as string[]).includes('--log_as_json'));
  assert.deepEqual(at(d, 'spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution'), {
    nodeSelectorTerms: [{ matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] }],
  });
  assert.equal(at(find(all, 'Service', 'istio-ingressgateway'), 'spec.type'), 'NodePort');
  find(all, 'PodDisruptionBudget', 'istio-ingressgateway');
  assert.equal(
    all.some((o) => o.kind === 'HorizontalPodAutoscaler'),
    false,
  );
});

test('an enabled egress gateway is refused: amesh has no egress gateway yet', () => {
  for (const sets of [
    ['components.egressGateways[0].enabled=true'],
    ['values.gateways.istio-egressgateway.enabled=true'],
  ])
    assert.throws(
      () => generate(sets),
      (e) =>
        isMeshError(e, 'INSTALL_ERR_VALUES') &&
        e.message.includes('amesh has no egress gateway') &&
        e.message.includes('istio-egressgateway'),
      sets.join(' '),
    );
});

test('a gateway port that needs root, a bad or repeated name, and injectionTemplate are refused', () => {
  const refused = (sets: string[], text: RegExp): void =>
    assert.throws(
      () => generate(sets),
      (e) => isMeshError(e, 'INSTALL_ERR_VALUES') && text.test(e.message),
      sets.join(' '),
    );
  const lowPort = [
    'components.ingressGateways[0].k8s.service.ports[0].name=http',
    'components.ingressGateways[0].k8s.service.ports[0].port=80',
    'components.ingressGateways[0].k8s.service.ports[0].targetPort=80',
  ];
  refused(lowPort, /port http\/80 in ingress gateway istio-ingressgateway: targetPort 80 needs root/);
  const root = gatewayObjects([...lowPort, 'values.gateways.istio-ingressgateway.runAsRoot=true']);
  const d = find(root, 'Deployment', 'istio-ingressgateway');
  assert.equal(at(d, 'spec.template.spec.securityContext'), undefined);
  assert.equal(container(d)['securityContext'], undefined);
  refused(['components.ingressGateways[0].name=Bad_Name'], /invalid name "Bad_Name"/);
  refused(
    [
      'components.ingressGateways[0].name=istio-ingressgateway',
      'components.ingressGateways[1].name=istio-ingressgateway',
    ],
    /two gateways named istio-ingressgateway in namespace istio-system/,
  );
  refused(['values.gateways.istio-ingressgateway.injectionTemplate=gateway'], /injectionTemplate/);
});

test('global.networkPolicy.enabled renders the gateway’s NetworkPolicy on its target ports', () => {
  const np = find(
    gatewayObjects(['values.global.networkPolicy.enabled=true']),
    'NetworkPolicy',
    'istio-ingressgateway',
  );
  assert.deepEqual(at(np, 'spec.podSelector.matchLabels'), { app: 'istio-ingressgateway', istio: 'ingressgateway' });
  assert.deepEqual(
    (at(np, 'spec.ingress') as { ports: { port: number }[] }[]).map((r) => r.ports.map((p) => p.port)),
    [[15021], [15020, 15090], [15021], [8080], [8443]],
  );
});
