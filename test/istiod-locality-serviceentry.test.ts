import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { startIstiod } from './helpers/in-process.js';
import { namespaces, pod } from './helpers/manifests.js';
import { sendAndCollect, waitFor } from './helpers/mesh-fixture.js';
import { silentLogs } from './helpers/captured-logs.js';

const ISTIOD_HOST = '127.74.0.1';
const ZT_CONTROL = '127.74.0.3';
const CLIENT = '127.74.1.1';
const SERVER = '127.74.1.2';
const SE_VIP = '10.96.74.1';
/** The implicit workload of the ServiceEntry is its host; `localhost` is the one name every machine resolves. */
const SE_HOST = 'localhost';
const SE_UID = `Kubernetes/networking.istio.io/ServiceEntry/backend/local-dns/${SE_HOST}`;

/** A captured pod on node n1. */
const capturedPod = (name: string, namespace: string, ip: string): string =>
  pod({ name: `${name}-0`, namespace, serviceAccount: name, node: 'n1', ip });

const manifests = (echoPort: number): string => `
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/region: eu-west1, topology.kubernetes.io/zone: eu-west1-b}}
${namespaces('frontend', 'backend')}${capturedPod('client', 'frontend', CLIENT)}${capturedPod('server', 'backend', SERVER)}---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: local-dns, namespace: backend}
spec:
  hosts: [${SE_HOST}]
  addresses: [${SE_VIP}]
  ports: [{number: 80, name: tcp, protocol: TCP, targetPort: ${echoPort}}]
  resolution: DNS
`;

const opened = (metrics: string, match: string): string => {
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith('istio_tcp_connections_opened_total{') && l.includes(match));
  assert.ok(
    line !== undefined,
    `no opened line with ${match} in:\n${metrics
      .split('\n')
      .filter((l) => l.startsWith('istio_tcp'))
      .join('\n')}`,
  );
  return line;
};

test("istiod → ztunnel: pods carry their Node's region/zone into istio_tcp_* labels; a DNS ServiceEntry without endpoints is reached at its host, its locality unknown", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-locality-'));
  const config = path.join(dir, 'config');
  await mkdir(config);
  const server = await startEchoServer(SERVER, 8080);
  const external = await startEchoServer('127.0.0.1', 0);
  await writeFile(path.join(config, 'mesh.yaml'), manifests(external.port));
  const ist = await startIstiod(config, path.join(dir, 'state'), { host: ISTIOD_HOST });
  let zt: Ztunnel | undefined;
  try {
    const token = path.join(dir, 'token');
    await writeFile(
      token,
      await ist.issuer.issue({
        namespace: 'istio-system',
        serviceAccount: 'ztunnel',
        node: 'n1',
        audience: 'istio-ca',
      }),
    );
    const istiod = `https://${ISTIOD_HOST}:${ist.ports.grpc}`;
    zt = await Ztunnel.start(
      loadZtunnelConfig(
        { adminAddress: `${ZT_CONTROL}:0`, metricsAddress: `${ZT_CONTROL}:0`, readinessAddress: `${ZT_CONTROL}:0` },
        {
          NODE_NAME: 'n1',
          XDS_ADDRESS: istiod,
          CA_ADDRESS: istiod,
          ALT_XDS_HOSTNAME: 'istiod.istio-system.svc',
          ALT_CA_HOSTNAME: 'istiod.istio-system.svc',
          XDS_ROOT_CA: ist.rootCertPath,
          CA_ROOT_CA: ist.rootCertPath,
          AUTH_TOKEN: token,
          POD_NAME: 'ztunnel-n1',
          POD_NAMESPACE: 'istio-system',
          UNSTABLE_ENABLE_SOCKS5: 'true',
        },
      ),
      silentLogs('ztunnel'),
    );
    const z = zt;
    await waitFor(
      'both pods proxied and the hostname workload known',
      () =>
        z.pending().length === 0 &&
        z.ctx.state.workloadByUid('Kubernetes//Pod/backend/server-0') !== undefined &&
        z.ctx.state.workloadByUid(SE_UID) !== undefined,
      15_000,
    );
    assert.deepEqual(z.ctx.state.workloadByUid('Kubernetes//Pod/backend/server-0')?.locality, {
      region: 'eu-west1',
      zone: 'eu-west1-b',
      subzone: '',
    });
    assert.equal(z.ctx.state.workloadByUid(SE_UID)?.hostname, SE_HOST);

    assert.equal(
      (await sendAndCollect(await socks5Connect(CLIENT, 15080, SERVER, 8080, CLIENT), 'mesh')).toString(),
      'mesh',
    );
    assert.equal(
      (await sendAndCollect(await socks5Connect(CLIENT, 15080, SE_VIP, 80, CLIENT), 'dns')).toString(),
      'dns',
      'the ServiceEntry VIP reaches its host by DNS',
    );

    const metrics = await (await fetch(`http://${ZT_CONTROL}:${z.ports.metrics}/metrics`)).text();
    const inbound = opened(metrics, 'reporter="destination"');
    assert.match(
      inbound,
      /source_region="eu-west1",source_zone="eu-west1-b",destination_region="eu-west1",destination_zone="eu-west1-b"/,
    );
    const toHost = opened(metrics, `destination_service="${SE_HOST}"`);
    assert.match(toHost, /reporter="source"/);
    assert.match(
      toHost,
      /source_region="eu-west1",source_zone="eu-west1-b",destination_region="unknown",destination_zone="unknown"/,
    );
  } finally {
    await zt?.shutdown();
    await ist.stop();
    await server.close();
    await external.close();
    await rm(dir, { recursive: true, force: true });
  }
});
