import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { LogControl } from '../src/lib/log.js';
import { loadIstiodConfig } from '../src/istiod/config.js';
import { Istiod } from '../src/istiod/istiod.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { freePorts } from './helpers/free-port.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { waitFor } from './helpers/mesh-fixture.js';

/** istiod comes back on the same address: ztunnel has only this one to dial. */
const ISTIOD_IP = '127.73.0.2';
/** "A few seconds": reconnect and certificates must follow istiod's return this closely. */
const PROMPT_MS = 5_000;

const pod = (name: string, sa: string, ip: string): string => `---
apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: frontend, annotations: {ambient.istio.io/redirection: enabled}}
spec: {serviceAccountName: ${sa}, nodeName: n1}
status: {phase: Running, podIP: ${ip}}
`;

test('after an istiod outage, ztunnel reconnects and gets certificates within seconds of istiod returning on the same port and state', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-recovery-'));
  const config = path.join(dir, 'config');
  const state = path.join(dir, 'state');
  await mkdir(config);
  const writeConfig = async (text: string): Promise<void> => {
    await writeFile(path.join(dir, '.m.tmp'), text);
    await rename(path.join(dir, '.m.tmp'), path.join(config, 'mesh.yaml'));
  };
  await writeConfig(pod('web-0', 'web', '127.73.2.1'));
  // A kernel-chosen port, kept across the restart.
  const [port] = await freePorts(ISTIOD_IP, 1);
  const ISTIOD = `${ISTIOD_IP}:${port ?? 0}`;
  const istiodLogs = new LogControl({ format: 'json', level: 'silent', component: 'istiod', out: new Writable({ write: (_c, _e, cb) => cb() }) });
  const startIstiod = (): Promise<Istiod> => Istiod.start(loadIstiodConfig({ configDir: config, stateDir: state, grpcAddress: ISTIOD, monitoringAddress: `${ISTIOD_IP}:0` }, {}), istiodLogs);
  let istiod = await startIstiod();
  const token = path.join(dir, 'token');
  await writeFile(token, await istiod.issuer.issue({ namespace: 'istio-system', serviceAccount: 'ztunnel', node: 'n1', audience: 'istio-ca' }));
  const root = path.join(state, 'root-cert.pem');
  const logs = new CapturedLogs('ztunnel', 'info,identity=debug');
  const zt = await Ztunnel.start(
    loadZtunnelConfig(
      { adminAddress: '127.73.0.3:0', metricsAddress: '127.73.0.3:0', readinessAddress: '127.73.0.3:0' },
      { NODE_NAME: 'n1', XDS_ADDRESS: `https://${ISTIOD}`, CA_ADDRESS: `https://${ISTIOD}`, ALT_XDS_HOSTNAME: 'istiod.istio-system.svc', ALT_CA_HOSTNAME: 'istiod.istio-system.svc', XDS_ROOT_CA: root, CA_ROOT_CA: root, AUTH_TOKEN: token, POD_NAME: 'ztunnel-n1', POD_NAMESPACE: 'istio-system' },
    ),
    logs.control,
  );
  const issuedAfter = (identity: string, since: number) => (l: Record<string, unknown>): boolean => l['message'] === 'certificate issued' && l['identity'] === identity && Date.parse(String(l['time'])) >= since;
  try {
    await waitFor('ztunnel ready', () => zt.pending().length === 0, 15_000);
    await istiod.stop();
    const down = Date.now();
    // Wait until the outage has cost a few failed reconnects, so their backoff has grown past the first steps.
    await logs.waitFor('xDS backoff grown past 0.5s', (l) => l['message'] === 'xDS connection lost; serving with the last known config' && Date.parse(String(l['time'])) >= down && Number(l['retryInMs']) >= 500, 15_000);
    // While istiod is away a pod is added: once back, ztunnel needs a certificate it has never had.
    await writeConfig(pod('web-0', 'web', '127.73.2.1') + pod('api-0', 'api', '127.73.2.2'));
    istiod = await startIstiod();
    const back = Date.now();
    const reconnected = await logs.waitFor('xDS stream established again', (l) => l['message'] === 'xDS stream established' && Date.parse(String(l['time'])) >= back, PROMPT_MS);
    const issued = await logs.waitFor('certificate for the new pod', issuedAfter('spiffe://cluster.local/ns/frontend/sa/api', back), PROMPT_MS);
    assert.ok(Date.parse(String(reconnected['time'])) - back < PROMPT_MS);
    assert.ok(Date.parse(String(issued['time'])) - back < PROMPT_MS);
    await waitFor('the new pod proxied', () => zt.pending().length === 0 && zt.ctx.state.workloadByUid('Kubernetes//Pod/frontend/api-0') !== undefined, PROMPT_MS);
    const metrics = await (await fetch(`http://127.73.0.3:${zt.ports.metrics}/metrics`)).text();
    const expiry = /istio_agent_cert_expiry_seconds\{resource_name="spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/api"\} (\S+)/.exec(metrics);
    assert.ok(expiry !== null && Number(expiry[1]) > 3600, `certificate expiry exported:\n${metrics.split('\n').filter((l) => l.startsWith('istio_agent')).join('\n')}`);
  } finally {
    await zt.shutdown();
    await istiod.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
