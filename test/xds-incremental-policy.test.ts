/**
 * ztunnel applies xDS deltas and re-checks live connections only when a decision may differ: a workload-only push
 * leaves them alone; a policy push re-checks them; a pod relabelled into a DENY's selector (which istiod sends as a
 * workload update only) closes the connection the DENY now denies. istiod and ztunnel run in this process over real
 * gRPC/TLS; traffic goes SOCKS5 → HBONE → echo on real sockets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type net from 'node:net';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import { Ztunnel } from '../src/ztunnel/ztunnel.js';
import type { ProxyState } from '../src/ztunnel/state/proxy-state.js';
import type { StateChange } from '../src/ztunnel/state/state-change.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startIstiod } from './helpers/in-process.js';
import { namespaces, pod } from './helpers/manifests.js';
import { waitFor } from './helpers/mesh-fixture.js';

const WEB_IP = '127.75.1.1';
const ECHO_IP = '127.75.1.2';
const ECHO_UID = 'Kubernetes//Pod/backend/echo-0';
const DEADLINE_MS = 10_000;
const REEVALUATED = 're-evaluating live connections against policy';

const NAMESPACES = namespaces('frontend', 'backend');
const capturedPod = (
  name: string,
  namespace: string,
  serviceAccount: string,
  ip: string,
  node: string,
  labels: Record<string, string>,
): string => pod({ name, namespace, serviceAccount, ip, node, labels });
const DENY_WEB_BLOCKED = `---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-web, namespace: backend}
spec: {selector: {matchLabels: {tier: blocked}}, action: DENY, rules: [{from: [{source: {principals: [cluster.local/ns/frontend/sa/web]}}]}]}
`;

/** Resolves with the first `change` after which `done` holds (or at once if it holds now); fails after the deadline. */
function stateWhere(state: ProxyState, what: string, done: () => boolean): Promise<StateChange[]> {
  const changes: StateChange[] = [];
  if (done()) return Promise.resolve(changes);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      state.off('change', on);
      reject(new Error(`no state change within ${DEADLINE_MS} ms: ${what}`));
    }, DEADLINE_MS);
    function on(c: StateChange): void {
      changes.push(c);
      if (!done()) return;
      clearTimeout(timer);
      state.off('change', on);
      resolve(changes);
    }
    state.on('change', on);
  });
}

async function withinDeadline(p: Promise<void>, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_r, reject) => (timer = setTimeout(() => reject(new Error(`not within ${DEADLINE_MS} ms: ${what}`)), DEADLINE_MS)),
  );
  try {
    await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function echoes(s: net.Socket, text: string): Promise<void> {
  let got = '';
  const all = new Promise<void>((resolve) => {
    const on = (d: Buffer): void => {
      got += String(d);
      if (got.length < text.length) return;
      s.off('data', on);
      resolve();
    };
    s.on('data', on);
  });
  s.write(text);
  await withinDeadline(all, `echo of "${text}"`);
  assert.equal(got, text);
}

test('xDS deltas: a workload-only push does not re-check live connections; a policy push does; a pod relabelled into a DENY closes its denied connection', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-xds-delta-'));
  const config = path.join(dir, 'config');
  await mkdir(config);
  const write = async (text: string): Promise<void> => {
    await writeFile(path.join(dir, '.m.tmp'), text);
    await rename(path.join(dir, '.m.tmp'), path.join(config, 'mesh.yaml'));
  };
  const web = NAMESPACES + capturedPod('web-0', 'frontend', 'web', WEB_IP, 'n1', { app: 'web' });
  const echoPod = (version: string, tier: string): string =>
    capturedPod('echo-0', 'backend', 'echo', ECHO_IP, 'n1', { app: 'echo', version, tier });
  await write(web + echoPod('v1', 'open'));
  const istiod = await startIstiod(config, path.join(dir, 'state'), { host: '127.75.0.2' });
  const token = path.join(dir, 'token');
  await writeFile(
    token,
    await istiod.issuer.issue({
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      node: 'n1',
      audience: 'istio-ca',
    }),
  );
  const root = istiod.rootCertPath;
  const address = `https://127.75.0.2:${istiod.ports.grpc}`;
  const logs = new CapturedLogs('ztunnel', 'info,ztunnel=debug');
  const zt = await Ztunnel.start(
    loadZtunnelConfig(
      { adminAddress: '127.75.0.3:0', metricsAddress: '127.75.0.3:0', readinessAddress: '127.75.0.3:0' },
      {
        NODE_NAME: 'n1',
        XDS_ADDRESS: address,
        CA_ADDRESS: address,
        ALT_XDS_HOSTNAME: 'istiod.istio-system.svc',
        ALT_CA_HOSTNAME: 'istiod.istio-system.svc',
        XDS_ROOT_CA: root,
        CA_ROOT_CA: root,
        AUTH_TOKEN: token,
        POD_NAME: 'ztunnel-n1',
        POD_NAMESPACE: 'istio-system',
        UNSTABLE_ENABLE_SOCKS5: 'true',
      },
    ),
    logs.control,
  );
  const echo = await startEchoServer(ECHO_IP, 8080);
  const state = zt.ctx.state;
  const reevaluations = (): number => logs.lines.filter((l) => l['message'] === REEVALUATED).length;
  try {
    await waitFor('ztunnel ready', () => zt.pending().length === 0, DEADLINE_MS);
    const s = await socks5Connect(WEB_IP, 15080, ECHO_IP, 8080, WEB_IP);
    // The app socket is half-open capable: the mesh closing it shows up as EOF first.
    const closed = new Promise<void>((resolve) => {
      s.once('end', resolve);
      s.once('close', resolve);
    });
    s.on('error', () => undefined);
    s.resume();
    await echoes(s, 'before');
    const before = reevaluations();

    // Workload-only: a pod on another node appears and the local echo-0 gets a new revision label.
    await write(
      web + echoPod('v2', 'open') + capturedPod('other-0', 'backend', 'echo', '127.75.1.3', 'n2', { app: 'other' }),
    );
    const workloadOnly = await stateWhere(
      state,
      'other-0 and echo-0 v2',
      () =>
        state.workloadByUid('Kubernetes//Pod/backend/other-0') !== undefined &&
        state.workloadByUid(ECHO_UID)?.canonicalRevision === 'v2',
    );
    assert.deepEqual(
      workloadOnly.flatMap((c) => c.policies),
      [],
      'istiod sent no policy',
    );
    assert.equal(reevaluations(), before, 'a workload-only push re-checks no live connection');
    await echoes(s, 'after a workload push');

    // A policy: its selector matches no pod yet, so the connection is re-checked and stays.
    await write(web + echoPod('v2', 'open') + DENY_WEB_BLOCKED);
    await stateWhere(state, 'the DENY policy', () => state.dump().policies.some((p) => p.name === 'deny-web'));
    assert.equal(reevaluations(), before + 1, 'a policy push re-checks live connections');
    await echoes(s, 'after a policy push');

    // echo-0 relabelled into the selector: only the workload changes (its policy list), and the DENY closes the connection.
    await write(web + echoPod('v2', 'blocked') + DENY_WEB_BLOCKED);
    const relabel = await stateWhere(
      state,
      'echo-0 naming deny-web',
      () => state.workloadByUid(ECHO_UID)?.authorizationPolicies.includes('backend/deny-web') === true,
    );
    assert.deepEqual(
      relabel.flatMap((c) => c.policies),
      [],
      'the Authorization itself did not change',
    );
    assert.equal(reevaluations(), before + 2);
    await withinDeadline(closed, 'the denied connection closed');
    assert.ok(
      logs.lines.some((l) => l['message'] === 'closing connection: no longer allowed by policy'),
      'closed by the policy re-check',
    );
  } finally {
    await zt.shutdown();
    await echo.close();
    await istiod.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
