import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Istiod } from '../src/istiod/istiod.js';
import { startIstiod } from './helpers/in-process.js';
import { namespaces, pod } from './helpers/manifests.js';
import { adsFromPython } from './helpers/ads-grpcio.js';
import { pythonSkip } from './helpers/python.js';

const skip = pythonSkip('grpc', 'python3-grpcio');

let dir: string;
let ist: Istiod;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'amesh-ads-py-'));
  await mkdir(path.join(dir, 'config'));
  await writeFile(
    path.join(dir, 'config', 'mesh.yaml'),
    namespaces('backend') +
      pod({
        name: 'echo-0',
        namespace: 'backend',
        serviceAccount: 'echo',
        node: 'node2',
        ip: '10.1.2.3',
        labels: { app: 'echo' },
      }) +
      '---\n{apiVersion: v1, kind: Service, metadata: {name: echo, namespace: backend}, spec: {clusterIP: 10.96.0.10, selector: {app: echo}, ports: [{port: 80, targetPort: 8080}]}}\n',
  );
  ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'));
});
after(async () => {
  await ist.stop();
  await rm(dir, { recursive: true, force: true });
});

test(
  'delta ADS from python3-grpcio with hand-decoded protobuf: Workload and Service field numbers of ztunnel `proto/workload.proto` on the wire',
  { skip },
  async () => {
    const r = await adsFromPython(ist);
    assert.equal(r.type_url, 'type.googleapis.com/istio.workload.Address');
    assert.ok(r.nonce_set);
    // The API server's own endpoint (default/kubernetes's EndpointSlice) is served too; this test is about echo's.
    assert.deepEqual(
      r.workloads.filter((w) => w['namespace'] === 'backend'),
      [
        {
          name: 'Kubernetes//Pod/backend/echo-0',
          version: r.workloads[0]!['version'],
          any_type: 'type.googleapis.com/istio.workload.Address',
          uid: 'Kubernetes//Pod/backend/echo-0',
          name_field: 'echo-0',
          namespace: 'backend',
          addresses: [[10, 1, 2, 3]],
          tunnel_protocol: 1,
          service_account: 'echo',
          node: 'node2',
          services: { 'backend/echo.backend.svc.cluster.local': [[80, 8080]] },
        },
      ],
    );
    // The API server's own default/kubernetes Service is served too, as on a cluster; this test is about echo's.
    const services = r.services.filter((svc) => svc['namespace'] === 'backend');
    assert.deepEqual(services, [
      {
        name: 'backend/echo.backend.svc.cluster.local',
        version: services[0]!['version'],
        any_type: 'type.googleapis.com/istio.workload.Address',
        svc_name: 'echo',
        namespace: 'backend',
        hostname: 'echo.backend.svc.cluster.local',
        vips: [[10, 96, 0, 10]],
        ports: [[80, 8080]],
      },
    ]);
  },
);
