import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { serviceEnv } from './service-env.js';

const svc = (
  namespace: string,
  name: string,
  clusterIP: string,
  ports: NonNullable<V1Service['spec']>['ports'] = [{ name: 'https', port: 443, protocol: 'TCP' }],
): V1Service => ({ metadata: { namespace, name }, spec: { clusterIP, ports } });
const SERVICES = [
  svc('default', 'kubernetes', '10.96.0.1'),
  svc('shop', 'web-api', '10.96.0.20', [{ port: 80 }, { name: 'dns', port: 53, protocol: 'UDP' }]),
  svc('shop', 'headless', 'None'),
  svc('other', 'elsewhere', '10.96.0.30'),
];
const pod = (spec: V1Pod['spec'] = { containers: [] }): V1Pod => ({ metadata: { namespace: 'shop', name: 'p' }, spec });

test("a container sees its namespace's Services and default/kubernetes as kubelet writes them, Docker links too", () => {
  const env = serviceEnv(pod(), SERVICES);
  assert.deepEqual(Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('WEB_API_'))), {
    WEB_API_SERVICE_HOST: '10.96.0.20',
    WEB_API_SERVICE_PORT: '80',
    WEB_API_SERVICE_PORT_DNS: '53',
    WEB_API_PORT: 'tcp://10.96.0.20:80',
    WEB_API_PORT_80_TCP: 'tcp://10.96.0.20:80',
    WEB_API_PORT_80_TCP_PROTO: 'tcp',
    WEB_API_PORT_80_TCP_PORT: '80',
    WEB_API_PORT_80_TCP_ADDR: '10.96.0.20',
    WEB_API_PORT_53_UDP: 'udp://10.96.0.20:53',
    WEB_API_PORT_53_UDP_PROTO: 'udp',
    WEB_API_PORT_53_UDP_PORT: '53',
    WEB_API_PORT_53_UDP_ADDR: '10.96.0.20',
  });
  assert.equal(env['KUBERNETES_SERVICE_HOST'], '10.96.0.1');
  assert.equal(env['KUBERNETES_SERVICE_PORT_HTTPS'], '443');
  assert.equal(env['HEADLESS_SERVICE_HOST'], undefined, 'headless Services have no address to give');
  assert.equal(env['ELSEWHERE_SERVICE_HOST'], undefined, "another namespace's Services are not linked");
});

test('enableServiceLinks: false keeps only default/kubernetes', () => {
  const env = serviceEnv(pod({ containers: [], enableServiceLinks: false }), SERVICES);
  assert.deepEqual(
    Object.keys(env).filter((k) => k.endsWith('_SERVICE_HOST')),
    ['KUBERNETES_SERVICE_HOST'],
  );
});
