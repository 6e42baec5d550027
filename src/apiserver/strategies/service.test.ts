import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { serviceStrategy } from './service.js';

function svc(spec: unknown, name = 'web'): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default', resourceVersion: '1' }, spec };
}

function created(spec: unknown): KubeObject {
  const s = svc(spec);
  serviceStrategy.prepareForCreate!(s);
  return s;
}

function fieldsAndMessages(obj: KubeObject): [string | undefined, string][] {
  return serviceStrategy.validate!(obj).map((c) => [c.field, c.message]);
}

test('create: type ClusterIP, sessionAffinity None, TCP ports with targetPort = port, status.loadBalancer {}', () => {
  const s = created({
    selector: { app: 'web' },
    ports: [{ port: 80 }, { name: 'grpc', port: 9090, targetPort: 'grpc', protocol: 'TCP' }],
  });
  assert.deepEqual(s.spec, {
    selector: { app: 'web' },
    ports: [
      { port: 80, protocol: 'TCP', targetPort: 80 },
      { name: 'grpc', port: 9090, targetPort: 'grpc', protocol: 'TCP' },
    ],
    type: 'ClusterIP',
    sessionAffinity: 'None',
    internalTrafficPolicy: 'Cluster',
  });
  assert.deepEqual(s.status, { loadBalancer: {} });
  const np = created({ type: 'NodePort', ports: [{ port: 80 }] });
  assert.equal((np.spec as { externalTrafficPolicy: string }).externalTrafficPolicy, 'Cluster');
});

test('validate: ports required unless headless or ExternalName; names required with several ports; ranges and enums', () => {
  const table: [unknown, [string, string][]][] = [
    [{ selector: { app: 'web' } }, [['spec.ports', 'Required value']]],
    [{ clusterIP: 'None' }, []],
    [{ type: 'ExternalName', externalName: 'db.example.com.' }, []],
    [{ type: 'ExternalName' }, [['spec.externalName', 'Required value']]],
    [
      { ports: [{ port: 80 }, { port: 80 }] },
      [
        ['spec.ports[0].name', 'Required value'],
        ['spec.ports[1].name', 'Required value'],
        [
          'spec.ports[1]',
          'Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}',
        ],
      ],
    ],
    [
      { ports: [{ port: 0, targetPort: 8080 }] },
      [['spec.ports[0].port', 'Invalid value: 0: must be between 1 and 65535, inclusive']],
    ],
    [
      { ports: [{ port: 80, protocol: 'ICMP' }] },
      [['spec.ports[0].protocol', 'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']],
    ],
    [
      { ports: [{ port: 80 }], type: 'Magic' },
      [
        [
          'spec.type',
          'Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
        ],
      ],
    ],
    [
      { ports: [{ port: 80, nodePort: 30080 }] },
      [['spec.ports[0].nodePort', "Forbidden: may not be used when `type` is 'ClusterIP'"]],
    ],
    [
      { ports: [{ port: 80 }], type: 'NodePort', clusterIP: 'None' },
      [['spec.clusterIPs[0]', 'Invalid value: "None": may not be set to \'None\' for NodePort services']],
    ],
    [
      { ports: [{ port: 80 }], clusterIP: '10.96.0.300' },
      [
        [
          'spec.clusterIPs[0]',
          'Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
        ],
      ],
    ],
    [
      { ports: [{ port: 80 }], selector: { 'bad key': 'x' } },
      [
        [
          'spec.selector',
          "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ],
      ],
    ],
  ];
  for (const [spec, want] of table) assert.deepEqual(fieldsAndMessages(created(spec)), want, JSON.stringify(spec));
});

test('update: a manifest without clusterIP keeps the allocated one; changing it is refused as upstream words it', () => {
  const old = created({ selector: { app: 'web' }, ports: [{ port: 80 }] });
  Object.assign(old.spec as object, {
    clusterIP: '10.96.1.7',
    clusterIPs: ['10.96.1.7'],
    ipFamilies: ['IPv4'],
    ipFamilyPolicy: 'SingleStack',
  });
  const again = svc({ selector: { app: 'web' }, ports: [{ port: 80 }] });
  serviceStrategy.prepareForUpdate!(again, old);
  assert.deepEqual(serviceStrategy.validateUpdate!(again, old), []);
  assert.deepEqual((again.spec as { clusterIPs: string[] }).clusterIPs, ['10.96.1.7']);
  assert.deepEqual(again.status, { loadBalancer: {} });

  const moved = svc({
    selector: { app: 'web' },
    ports: [{ port: 80 }],
    clusterIP: '10.96.1.8',
    clusterIPs: ['10.96.1.8'],
  });
  serviceStrategy.prepareForUpdate!(moved, old);
  assert.deepEqual(
    serviceStrategy.validateUpdate!(moved, old).map((c) => [c.field, c.message]),
    [['spec.clusterIPs[0]', 'Invalid value: []string{"10.96.1.8"}: may not change once set']],
  );
});
