import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { startEchoServer, type EchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { spawnZtunnel, type ZtunnelProcess } from '../src/demo/ztunnel-process.js';
import { ameshCommand } from '../src/up/amesh-command.js';
import { sendAndCollect, waitFor } from './helpers/mesh-fixture.js';
import { TEST_DEADLINE_MS } from './helpers/deadlines.js';
import { freeControlPorts, freePorts } from './helpers/free-port.js';
import { namespaces, pod } from './helpers/manifests.js';

const ISTIOD_IP = '127.62.1.1';
/** istiod's gRPC and monitoring addresses, on kernel-chosen ports (set in `before`). */
let GRPC = '';
let MON = '';

function manifests(extra = ''): string {
  return (
    namespaces('frontend', 'backend') +
    pod({
      name: 'web-0',
      namespace: 'frontend',
      serviceAccount: 'web',
      node: 'node1',
      ip: '127.62.0.1',
      labels: { app: 'web' },
    }) +
    pod({
      name: 'echo-0',
      namespace: 'backend',
      serviceAccount: 'echo',
      node: 'node2',
      ip: '127.62.0.2',
      labels: { app: 'echo' },
      ports: { http: 8080 },
    }) +
    '---\n{apiVersion: v1, kind: Service, metadata: {name: echo, namespace: backend}, spec: {clusterIP: 10.96.70.10, selector: {app: echo}, ports: [{port: 80, targetPort: http}]}}\n' +
    extra
  );
}

const DENY_WEB = `---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-web, namespace: backend}
spec: {action: DENY, rules: [{from: [{source: {principals: [cluster.local/ns/frontend/sa/web]}}]}]}
`;

describe('istiod and two ztunnel processes over real gRPC/TLS', () => {
  let dir: string;
  let istiod: ChildProcess;
  let istiodOut = '';
  let z1: ZtunnelProcess;
  let z2: ZtunnelProcess;
  let echo: EchoServer;

  const writeManifests = async (text: string): Promise<void> => {
    await writeFile(path.join(dir, '.m.tmp'), text);
    await rename(path.join(dir, '.m.tmp'), path.join(dir, 'config', 'mesh.yaml'));
  };
  const startIstiod = (): ChildProcess => {
    const { cmd, args } = ameshCommand();
    const p = spawn(
      cmd,
      [
        ...args,
        'istiod',
        '--config-dir',
        path.join(dir, 'config'),
        '--state-dir',
        path.join(dir, 'state'),
        '--grpc-address',
        GRPC,
        '--monitoring-address',
        MON,
        '--webhook-address',
        `${ISTIOD_IP}:0`,
        '--apiserver-address',
        `${ISTIOD_IP}:0`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    p.stdout.on('data', (d: Buffer) => (istiodOut += d.toString()));
    p.stderr.on('data', (d: Buffer) => (istiodOut += d.toString()));
    return p;
  };
  const istiodReady = (): Promise<number> =>
    waitFor(
      'istiod ready',
      () =>
        fetch(`http://${MON}/ready`).then(
          (r) => r.ok,
          () => false,
        ),
      TEST_DEADLINE_MS,
    );
  const token = async (node: string): Promise<string> => {
    const { cmd, args } = ameshCommand();
    const p = spawn(
      cmd,
      [
        ...args,
        'istiod',
        'token',
        '--namespace',
        'istio-system',
        '--service-account',
        'ztunnel',
        '--node',
        node,
        '--state-dir',
        path.join(dir, 'state'),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise((r) => p.once('exit', r));
    const f = path.join(dir, `token-${node}`);
    await writeFile(f, out.trim());
    return f;
  };
  const ztunnel = async (node: string, ip: string): Promise<ZtunnelProcess> =>
    spawnZtunnel({
      localConfig: '',
      nodeName: node,
      controlIp: ip,
      controlPorts: await freeControlPorts(ip),
      env: {
        LOCAL_XDS_PATH: '',
        XDS_ADDRESS: `https://${GRPC}`,
        CA_ADDRESS: `https://${GRPC}`,
        UNSTABLE_ENABLE_SOCKS5: 'true',
        ALT_XDS_HOSTNAME: 'istiod.istio-system.svc',
        ALT_CA_HOSTNAME: 'istiod.istio-system.svc',
        XDS_ROOT_CA: path.join(dir, 'state', 'root-cert.pem'),
        CA_ROOT_CA: path.join(dir, 'state', 'root-cert.pem'),
        AUTH_TOKEN: await token(node),
        LOG_FORMAT: 'json',
        POD_NAME: `ztunnel-${node}`,
        POD_NAMESPACE: 'istio-system',
      },
    });
  const dump = async (
    z: ZtunnelProcess,
  ): Promise<{
    workloads: { uid: string }[];
    policies: { name: string }[];
    certificates: { identity: string; state: string }[];
  }> => (await (await fetch(`http://${z.admin}/config_dump`)).json()) as never;

  before(async () => {
    const [grpcPort, monPort] = await freePorts(ISTIOD_IP, 2);
    GRPC = `${ISTIOD_IP}:${grpcPort ?? 0}`;
    MON = `${ISTIOD_IP}:${monPort ?? 0}`;
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-e2e-'));
    await import('node:fs/promises').then((fs) => fs.mkdir(path.join(dir, 'config')));
    await writeManifests(manifests());
    istiod = startIstiod();
    await istiodReady();
    echo = await startEchoServer('127.62.0.2', 8080);
    z1 = await ztunnel('node1', '127.62.2.1');
    z2 = await ztunnel('node2', '127.62.2.2');
    await Promise.all([z1.waitReady(), z2.waitReady()]);
  });
  after(async () => {
    // Optional: a failed `before` leaves some unset, and what it started must still stop or the file never ends.
    await Promise.all([z1?.stop(), z2?.stop()]);
    istiod?.kill('SIGTERM');
    await echo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('workloads and services from the manifests reach ztunnel; certificates come from istiod by impersonation', async () => {
    const d = await dump(z2);
    // The pods, and the endpoint of the API server's own `kubernetes` Service.
    assert.deepEqual(d.workloads.map((w) => w.uid.replace(/\/kubernetes\/[^/]+$/, '/kubernetes/<api>')).sort(), [
      'Kubernetes//Pod/backend/echo-0',
      'Kubernetes//Pod/frontend/web-0',
      'Kubernetes/discovery.k8s.io/EndpointSlice/default/kubernetes/<api>',
    ]);
    assert.equal(
      d.certificates.find((c) => c.identity === 'spiffe://cluster.local/ns/backend/sa/echo')?.state,
      'Available',
    );
    const s = await socks5Connect('127.62.0.1', 15080, '10.96.70.10', 80, '127.62.0.1');
    assert.equal((await sendAndCollect(s, 'via istiod')).toString(), 'via istiod');
  });

  test('a manifest edit reaches both ztunnels over their xDS streams and changes what is allowed', async () => {
    await writeManifests(manifests(DENY_WEB));
    await waitFor(
      'policy in both config dumps',
      async () =>
        (await dump(z1)).policies.some((p) => p.name === 'deny-web') &&
        (await dump(z2)).policies.some((p) => p.name === 'deny-web'),
      TEST_DEADLINE_MS,
    );
    await assert.rejects(socks5Connect('127.62.0.1', 15080, '10.96.70.10', 80, '127.62.0.1'));
    await writeManifests(manifests());
    await waitFor(
      'policy removed',
      async () => !(await dump(z2)).policies.some((p) => p.name === 'deny-web'),
      TEST_DEADLINE_MS,
    );
  });

  test('traffic keeps flowing while istiod is stopped, and state converges after it returns', async () => {
    istiod.kill('SIGTERM');
    await new Promise((r) => istiod.once('exit', r));
    const s = await socks5Connect('127.62.0.1', 15080, '10.96.70.10', 80, '127.62.0.1');
    assert.equal((await sendAndCollect(s, 'istiod is down')).toString(), 'istiod is down');
    await writeManifests(manifests(DENY_WEB));
    istiod = startIstiod();
    await istiodReady();
    await waitFor(
      'ztunnels reconnect and converge',
      async () => (await dump(z2)).policies.some((p) => p.name === 'deny-web'),
      TEST_DEADLINE_MS,
    );
    await writeManifests(manifests());
    await waitFor(
      'policy removed again',
      async () => !(await dump(z2)).policies.some((p) => p.name === 'deny-web'),
      TEST_DEADLINE_MS,
    );
  });
});
