import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { socks5Connect, Socks5Error } from '../src/echo/socks5-client.js';
import type { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { meshFixture, sendAndCollect, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';
import { pythonSkip } from './helpers/python.js';
import { pythonXdsServer, spawnPythonPeer, type PythonPeer } from './helpers/python-xds-server.js';
import { startZtunnel } from './helpers/in-process.js';

const skip = pythonSkip('grpc', 'python3-grpcio') || pythonSkip('h2', 'python3-h2');

const XDS_IP = '127.122.0.100';
const WEB_IP = '127.122.0.1';
const DB_IP = '127.122.0.3';
const WAYPOINT_IP = '127.122.0.9';
const DOWN_WAYPOINT_IP = '127.122.0.8';
const WAYPOINT_HOST = 'waypoint.backend.svc.cluster.local';

/**
 * What the Python xDS server sends, in its own JSON (test/interop/xds_server_grpcio.py): web-0 calls; the echo
 * service names the waypoint service by hostname; db-0 names it by its VIP; wp-0 is the waypoint, a Python h2 HBONE
 * server. `lost` names a waypoint nobody serves, `down` one whose pod does not listen; both are backed by wp-0, which
 * ztunnel could reach if it went around their waypoints.
 */
const RESOURCES = [
  {
    workload: {
      uid: 'Kubernetes//Pod/frontend/web-0',
      name: 'web-0',
      namespace: 'frontend',
      addresses: [WEB_IP],
      service_account: 'web',
      node: 'n1',
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/db-0',
      name: 'db-0',
      namespace: 'backend',
      addresses: [DB_IP],
      service_account: 'db',
      node: 'n2',
      waypoint: { address: '10.96.0.20' },
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/wp-0',
      name: 'wp-0',
      namespace: 'backend',
      addresses: [WAYPOINT_IP],
      service_account: 'waypoint',
      node: 'n3',
      // Also behind `lost` and `down`: without their waypoints, ztunnel could reach them straight.
      services: {
        [`backend/${WAYPOINT_HOST}`]: [[15008, 15008]],
        'backend/lost.backend.svc.cluster.local': [[80, 8080]],
        'backend/down.backend.svc.cluster.local': [[80, 8080]],
      },
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/wp-down',
      name: 'wp-down',
      namespace: 'backend',
      addresses: [DOWN_WAYPOINT_IP],
      service_account: 'waypoint',
      node: 'n3',
    },
  },
  {
    service: {
      name: 'echo',
      namespace: 'backend',
      hostname: 'echo.backend.svc.cluster.local',
      vips: ['10.96.0.10'],
      ports: [[80, 8080]],
      waypoint: { namespace: 'backend', hostname: WAYPOINT_HOST },
    },
  },
  {
    service: {
      name: 'waypoint',
      namespace: 'backend',
      hostname: WAYPOINT_HOST,
      vips: ['10.96.0.20'],
      ports: [[15008, 15008]],
    },
  },
  {
    service: {
      name: 'lost',
      namespace: 'backend',
      hostname: 'lost.backend.svc.cluster.local',
      vips: ['10.96.0.30'],
      ports: [[80, 8080]],
      waypoint: { namespace: 'backend', hostname: 'gone.backend.svc.cluster.local' },
    },
  },
  {
    service: {
      name: 'down',
      namespace: 'backend',
      hostname: 'down.backend.svc.cluster.local',
      vips: ['10.96.0.40'],
      ports: [[80, 8080]],
      waypoint: { address: DOWN_WAYPOINT_IP },
    },
  },
];

describe(
  'ztunnel and waypoints served by an xDS server that is not amesh (python3-grpcio, hand-encoded protos)',
  { skip },
  () => {
    let fx: MeshFixture;
    let xds: PythonPeer;
    let waypoint: PythonPeer;
    let zt: Ztunnel;
    const logs = new CapturedLogs('ztunnel');

    before(async () => {
      fx = await meshFixture();
      const served = await pythonXdsServer(fx.dir, XDS_IP, RESOURCES);
      xds = served.peer;
      const c = await fx.cert('spiffe://cluster.local/ns/backend/sa/waypoint');
      await writeFile(fx.file('wp.crt'), c.leafPem + c.intermediatesPem.join(''));
      await writeFile(fx.file('wp.key'), c.keyPem);
      await writeFile(fx.file('root.pem'), c.rootsPem.join(''));
      waypoint = spawnPythonPeer('h2_hbone.py', [
        'server',
        WAYPOINT_IP,
        '15008',
        fx.file('wp.crt'),
        fx.file('wp.key'),
        fx.file('root.pem'),
      ]);
      await waitFor('python waypoint', () => waypoint.lines().includes('listening'));

      zt = await startZtunnel('', 'n1', fx.ca, served.env, { logs: logs.control });
    });

    after(async () => {
      await zt?.shutdown();
      xds?.proc.kill();
      waypoint?.proc.kill();
      await fx?.cleanup();
    });

    /** The CONNECTs the waypoint has received, as it printed them. */
    const connects = (): { method: string; authority: string; peer: string[] }[] =>
      waypoint
        .lines()
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { method: string; authority: string; peer: string[] });

    const through = async (dstIp: string, dstPort: number, payload: string): Promise<void> => {
      const s = await socks5Connect(WEB_IP, 15080, dstIp, dstPort, WEB_IP);
      assert.equal((await sendAndCollect(s, payload)).toString(), payload);
    };

    test('ztunnel ACKs the Address resources with a waypoint from the foreign server', async () => {
      const acks = (): { error: boolean }[] =>
        xds
          .lines()
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { type_url: string; nonce: string; error: boolean })
          .filter((r) => r.type_url === 'type.googleapis.com/istio.workload.Address' && r.nonce !== '');
      // Readiness needs the ACK sent, not yet printed by the server: wait for its line.
      await waitFor('the Address ACK printed by the server', () => acks().length > 0);
      assert.ok(acks().every((a) => !a.error));
    });

    test('to a service with a waypoint: HBONE to the waypoint as the client, CONNECT to the VIP:port the app dialled', async () => {
      await through('10.96.0.10', 80, 'via the service waypoint');
      assert.deepEqual(connects().at(-1), {
        method: 'CONNECT',
        authority: '10.96.0.10:80',
        peer: ['spiffe://cluster.local/ns/frontend/sa/web'],
      });
    });

    test("to a workload whose waypoint is named by the waypoint service's VIP: CONNECT to the workload's own address", async () => {
      await through(DB_IP, 5432, 'via the workload waypoint');
      assert.equal(connects().at(-1)?.authority, `${DB_IP}:5432`);
    });

    test('to the waypoint pod itself, which has no waypoint: straight to it', async () => {
      await through(WAYPOINT_IP, 7000, 'direct');
      assert.equal(connects().at(-1)?.authority, `${WAYPOINT_IP}:7000`);
    });

    test('fail closed: an unknown waypoint, or one that is down, fails the connection and never goes around it', async () => {
      const before = connects().length;
      await assert.rejects(socks5Connect(WEB_IP, 15080, '10.96.0.30', 80, WEB_IP), (e) => e instanceof Socks5Error);
      await logs.waitFor('the unknown waypoint logged', (l) =>
        JSON.stringify(l).includes('waypoint backend/gone.backend.svc.cluster.local not found'),
      );
      await assert.rejects(socks5Connect(WEB_IP, 15080, '10.96.0.40', 80, WEB_IP), (e) => e instanceof Socks5Error);
      assert.equal(connects().length, before);
    });
  },
);
