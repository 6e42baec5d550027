import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RenderedObject } from './chart-helpers.js';
import type { LiveObject } from './cluster-client.js';
import { covers, desiredObject } from './live-object.js';

test('a live object covers its rendering when every rendered field has that value, whatever the API added', () => {
  const rendered = {
    spec: {
      containers: [
        { name: 'c', env: [{ name: 'A', value: '1' }], resources: { requests: { memory: '2048Mi', cpu: '500m' } } },
      ],
      hostNetwork: false,
      nodeSelector: {},
      tolerations: [],
    },
  };
  const live = {
    spec: {
      containers: [
        {
          name: 'c',
          env: [{ name: 'A', value: '1' }],
          resources: { requests: { memory: '2Gi', cpu: '0.5' } },
          imagePullPolicy: 'IfNotPresent',
          terminationMessagePath: '/dev/termination-log',
        },
      ],
      dnsPolicy: 'ClusterFirst',
    },
    status: { phase: 'Running' },
  };
  assert.equal(covers(rendered, live), true, 'defaults, zero values left out and quantities of equal value');
  assert.equal(covers({ spec: { containers: [{ name: 'c', env: [{ name: 'A', value: '2' }] }] } }, live), false);
  assert.equal(covers({ spec: { containers: [{ name: 'c' }, { name: 'd' }] } }, live), false, 'another list length');
  assert.equal(
    covers({ metadata: { labels: { version: '1' } } }, { metadata: { labels: { version: '01' } } }),
    false,
    'labels are not quantities',
  );
});

const webhook = (extra: object): RenderedObject => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name: 'istio-validator-istio-system', labels: { app: 'istiod' } },
  webhooks: [{ name: 'rev.validation.istio.io', clientConfig: { service: { name: 'istiod' } }, ...extra }],
});

test('istiod’s caBundle and Fail policy on its webhook are kept, so a second install leaves the webhook alone', () => {
  const rendered = webhook({ failurePolicy: 'Ignore' });
  const live = {
    ...webhook({ failurePolicy: 'Fail' }),
    webhooks: [
      {
        name: 'rev.validation.istio.io',
        clientConfig: { service: { name: 'istiod' }, caBundle: 'Q0E=' },
        failurePolicy: 'Fail',
      },
    ],
    metadata: { name: 'istio-validator-istio-system', labels: { app: 'istiod' }, resourceVersion: '7' },
  } as LiveObject;
  const desired = desiredObject(rendered, live);
  assert.equal(covers(desired, live), true);
  assert.deepEqual((desired['webhooks'] as { clientConfig: object; failurePolicy: string }[])[0], {
    name: 'rev.validation.istio.io',
    clientConfig: { service: { name: 'istiod' }, caBundle: 'Q0E=' },
    failurePolicy: 'Fail',
  });
});

test('a replacement keeps what others own: foreign labels, HPA-set replicas, allocated cluster IPs', () => {
  const deployment: RenderedObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'istiod', labels: { app: 'istiod' } },
    spec: { template: { spec: { containers: [{ name: 'discovery', image: 'new' }] } } },
  };
  const live = {
    ...deployment,
    metadata: {
      name: 'istiod',
      labels: { app: 'istiod', team: 'mesh' },
      annotations: { 'deployment.kubernetes.io/revision': '3' },
    },
    spec: { replicas: 4, template: { spec: { containers: [{ name: 'discovery', image: 'old' }] } } },
  } as LiveObject;
  const desired = desiredObject(deployment, live);
  assert.equal(covers(desired, live), false);
  assert.deepEqual(desired.metadata.labels, { app: 'istiod', team: 'mesh' });
  assert.deepEqual(desired.metadata.annotations, { 'deployment.kubernetes.io/revision': '3' });
  assert.equal((desired['spec'] as { replicas: number }).replicas, 4);

  const service: RenderedObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'istiod' },
    spec: { ports: [{ port: 15012, protocol: 'TCP' }], selector: { app: 'istiod' } },
  };
  const liveService = {
    ...service,
    spec: {
      clusterIP: '10.96.0.9',
      clusterIPs: ['10.96.0.9'],
      ports: [{ port: 15012, protocol: 'TCP', targetPort: 15012 }],
      selector: { app: 'istiod' },
    },
  } as LiveObject;
  const desiredService = desiredObject(service, liveService);
  assert.equal((desiredService['spec'] as { clusterIP: string }).clusterIP, '10.96.0.9');
  assert.equal(covers(desiredService, liveService), true);
});
