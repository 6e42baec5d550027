import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadIstiodConfig } from '../src/istiod/config.js';
import { Istiod } from '../src/istiod/istiod.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { freePorts } from './helpers/free-port.js';
import { CapturedLogs, silentLogs } from './helpers/captured-logs.js';
import { waitFor } from './helpers/mesh-fixture.js';
import { namespaces, pod } from './helpers/manifests.js';

/** istiod comes back on the same address: ztunnel has only this one to dial. */
const ISTIOD_IP = '127.73.0.2';
/**
 * The outage: long enough that grpc-js's own reconnect backoff (1 s growing ×1.6 per failed dial, ±20 %, up to 120 s)
 * is past its sixth step, so left uncapped it would not dial again for about 10 s or more after any dial. With the
 * channel's cap (1 s) ztunnel keeps dialing every second.
 */
const OUTAGE_MS = 25_000;
/**
 * istiod returns when ztunnel's next xDS attempt is this far away: later than the capped channel needs to dial and
 * connect again, sooner than an uncapped channel would dial at all.
 */
const NEXT_XDS_ATTEMPT_MS = { min: 4_000, max: 7_000 };
/** ...and the failed certificate's own retry is at least this much later than that xDS attempt. */
const CERT_RETRY_AFTER_XDS_MS = 5_000;
/** Once the xDS stream is back, certificates follow within this (ztunnel retries failed ones at once). */
const PROMPT_MS = 3_000;
const XDS_LOST = 'xDS connection lost; serving with the last known config';
const WEB = 'spiffe://cluster.local/ns/frontend/sa/web';
const API = 'spiffe://cluster.local/ns/frontend/sa/api';

const capturedPod = (name: string, serviceAccount: string, ip: string): string =>
  pod({ name, namespace: 'frontend', serviceAccount, ip, node: 'n1' });

type Line = Record<string, unknown>;
const at = (l: Line): number => Date.parse(String(l['time']));
/** When the retry a failure line announces falls due, for the last line `match` accepts; undefined before any. */
const nextRetry = (lines: readonly Line[], match: (l: Line) => boolean): number | undefined => {
  const l = lines.findLast(match);
  return l === undefined ? undefined : at(l) + Number(l['retryInMs']);
};

test('after a long istiod outage, ztunnel reconnects at its first xDS attempt and retries the certificate that failed during the outage at once', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-recovery-'));
  const config = path.join(dir, 'config');
  const state = path.join(dir, 'state');
  await mkdir(config);
  const writeConfig = async (text: string): Promise<void> => {
    await writeFile(path.join(dir, '.m.tmp'), text);
    await rename(path.join(dir, '.m.tmp'), path.join(config, 'mesh.yaml'));
  };
  await writeConfig(namespaces('frontend') + capturedPod('web-0', 'web', '127.73.2.1'));
  // A kernel-chosen port, kept across the restart.
  const [port = 0] = await freePorts(ISTIOD_IP, 1);
  const ISTIOD = `${ISTIOD_IP}:${port}`;
  const istiodLogs = silentLogs('istiod');
  const startIstiod = (): Promise<Istiod> =>
    Istiod.start(
      loadIstiodConfig(
        {
          configDir: config,
          stateDir: state,
          grpcAddress: ISTIOD,
          monitoringAddress: `${ISTIOD_IP}:0`,
          webhookAddress: `${ISTIOD_IP}:0`,
          apiserverAddress: `${ISTIOD_IP}:0`,
        },
        {},
      ),
      istiodLogs,
    );
  let istiod = await startIstiod();
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
  const root = path.join(state, 'root-cert.pem');
  const logs = new CapturedLogs('ztunnel', 'info,identity=debug');
  const zt = await Ztunnel.start(
    loadZtunnelConfig(
      { adminAddress: '127.73.0.3:0', metricsAddress: '127.73.0.3:0', readinessAddress: '127.73.0.3:0' },
      // A 2 s certificate is refreshed every second: its refresh falls due (and fails) as soon as istiod is gone.
      {
        NODE_NAME: 'n1',
        SECRET_TTL: '2s',
        XDS_ADDRESS: `https://${ISTIOD}`,
        CA_ADDRESS: `https://${ISTIOD}`,
        ALT_XDS_HOSTNAME: 'istiod.istio-system.svc',
        ALT_CA_HOSTNAME: 'istiod.istio-system.svc',
        XDS_ROOT_CA: root,
        CA_ROOT_CA: root,
        AUTH_TOKEN: token,
        POD_NAME: 'ztunnel-n1',
        POD_NAMESPACE: 'istio-system',
      },
    ),
    logs.control,
  );
  const issuedAfter =
    (identity: string, since: number) =>
    (l: Line): boolean =>
      l['message'] === 'certificate issued' && l['identity'] === identity && at(l) >= since;
  const webFailed = (l: Line): boolean =>
    l['identity'] === WEB && /^certificate (fetch|refresh) failed/.test(String(l['message']));
  let deadIstiod: net.Server | undefined;
  try {
    await waitFor('ztunnel ready', () => zt.pending().length === 0, 15_000);
    await istiod.stop();
    const down = Date.now();
    // While istiod is away, its address accepts and drops each dial, so the test sees when ztunnel dials.
    deadIstiod = net.createServer((s) => s.destroy()).listen(port, ISTIOD_IP);
    await once(deadIstiod, 'listening');
    // While istiod is away a pod is added: once back, ztunnel needs a certificate it has never had.
    await writeConfig(
      namespaces('frontend') + capturedPod('web-0', 'web', '127.73.2.1') + capturedPod('api-0', 'api', '127.73.2.2'),
    );
    const returnAt = await new Promise<{ nextXds: number; nextCert: number }>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `ztunnel did not dial istiod's address ${NEXT_XDS_ATTEMPT_MS.min}-${NEXT_XDS_ATTEMPT_MS.max}ms before an xDS attempt after a ${OUTAGE_MS}ms outage`,
            ),
          ),
        OUTAGE_MS + 60_000,
      );
      deadIstiod?.on('connection', () => {
        const now = Date.now();
        const nextXds = nextRetry(logs.lines, (l) => l['message'] === XDS_LOST);
        const nextCert = nextRetry(logs.lines, webFailed);
        if (now < down + OUTAGE_MS || nextXds === undefined || nextCert === undefined) return;
        if (
          nextXds - now < NEXT_XDS_ATTEMPT_MS.min ||
          nextXds - now > NEXT_XDS_ATTEMPT_MS.max ||
          nextCert - nextXds < CERT_RETRY_AFTER_XDS_MS
        )
          return;
        clearTimeout(timer);
        resolve({ nextXds, nextCert });
      });
    });
    await new Promise((resolve) => deadIstiod?.close(resolve));
    deadIstiod = undefined;
    istiod = await startIstiod();
    const back = Date.now();
    const reconnected = at(
      await logs.waitFor(
        'xDS stream established again',
        (l) => l['message'] === 'xDS stream established' && at(l) >= back,
        30_000,
      ),
    );
    const failedAttempts = logs.lines.filter((l) => l['message'] === XDS_LOST && at(l) >= back && at(l) <= reconnected);
    assert.deepEqual(failedAttempts, [], 'the first xDS attempt after istiod returned connects');
    assert.ok(
      reconnected <= returnAt.nextXds + 1_000,
      `xDS back ${reconnected - returnAt.nextXds}ms after its scheduled attempt`,
    );
    // The certificate that failed during the outage: retried when the stream is back, not when its backoff ends.
    const web = at(await logs.waitFor('certificate that failed during the outage', issuedAfter(WEB, back), 30_000));
    assert.ok(
      web - reconnected < PROMPT_MS && web < returnAt.nextCert,
      `web's certificate came ${web - reconnected}ms after the xDS stream, ${returnAt.nextCert - web}ms before its own retry`,
    );
    const api = at(await logs.waitFor('certificate for the new pod', issuedAfter(API, back), 30_000));
    assert.ok(
      api - reconnected < PROMPT_MS,
      `the new pod's certificate came ${api - reconnected}ms after the xDS stream`,
    );
    await waitFor(
      'the new pod proxied',
      () => zt.pending().length === 0 && zt.ctx.state.workloadByUid('Kubernetes//Pod/frontend/api-0') !== undefined,
      PROMPT_MS,
    );
    const metrics = await (await fetch(`http://127.73.0.3:${zt.ports.metrics}/metrics`)).text();
    const expiry =
      /istio_agent_cert_expiry_seconds\{resource_name="spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/api"\} (\S+)/.exec(
        metrics,
      );
    assert.ok(
      expiry !== null && Number(expiry[1]) > 0,
      `certificate expiry exported:\n${metrics
        .split('\n')
        .filter((l) => l.startsWith('istio_agent'))
        .join('\n')}`,
    );
    assert.match(
      metrics,
      /istio_agent_cert_last_error_timestamp_seconds\{resource_name="spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/web"\} [1-9]/,
      'the failure during the outage is exported',
    );
  } finally {
    deadIstiod?.close();
    await zt.shutdown();
    await istiod.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
