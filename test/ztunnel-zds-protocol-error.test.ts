// A real `amesh ztunnel` process in in-pod mode (INPOD_ENABLED, INPOD_UDS) against an independent node agent (the
// Go peer in test/interop/zds_go) that breaks the ZDS protocol after its snapshot: ztunnel nacks the message with
// `failure to process message : ...`, hangs up, logs why and exits non-zero, as Istio's ztunnel does
// (ztunnel `src/inpod/statemanager.rs` ProtocolError). Root only (in-pod mode), and Go must be installed.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { spawnZtunnel } from '../src/demo/ztunnel-process.js';
import { buildGoPeer, goSkip, startGoPeer } from './helpers/go.js';
import { meshFixture, type MeshFixture } from './helpers/mesh-fixture.js';
import { netnsSkip } from './helpers/netns.js';

const skip = netnsSkip() || goSkip();
/** This test's loopback address, for ztunnel's admin, metrics and readiness ports. */
const CONTROL_IP = '127.85.0.1';

const CASES = [
  { name: 'keep-after-snapshot', why: /KeepWorkload for pod-k after SnapshotSent/ },
  { name: 'second-snapshot', why: /a second SnapshotSent on one connection/ },
  { name: 'add-without-info', why: /AddWorkload for pod-x has no workload_info/ },
];

describe('ztunnel exits when the node agent breaks the ZDS protocol', { skip }, () => {
  let fx: MeshFixture;
  let go: string;

  before(async () => {
    [fx, go] = await Promise.all([meshFixture(), buildGoPeer('zds_go')]);
    await fx.write('mesh.yaml', 'workloads: []\n');
  });
  after(async () => {
    await fx.cleanup();
    await rm(path.dirname(go), { recursive: true, force: true });
  });

  for (const c of CASES) {
    test(
      `${c.name}: ztunnel nacks with "failure to process message", hangs up, logs the protocol error and exits 1`,
      { timeout: 60_000 },
      async () => {
        const sock = fx.file(`${c.name}.sock`);
        const agent = startGoPeer(go, ['agent-protocol-error', sock, c.name], 'listening');
        await agent.ready;
        const agentExit = once(agent.proc, 'exit') as Promise<[number | null]>;
        const zt = spawnZtunnel({
          localConfig: fx.file('mesh.yaml'),
          nodeName: 'node102',
          localCa: fx.ca,
          controlIp: CONTROL_IP,
          env: { INPOD_ENABLED: 'true', INPOD_UDS: sock, LOG_FORMAT: 'json', UNSTABLE_ENABLE_SOCKS5: 'false' },
        });
        const ztExit = once(zt.child, 'exit') as Promise<[number | null]>;
        try {
          const [agentStatus] = await agentExit;
          assert.equal(agentStatus, 0, agent.output());
          const lines = agent.output().trim().split('\n');
          assert.deepEqual(lines.slice(0, 3), ['listening', 'hello version=1', 'snapshot_sent ack'], agent.output());
          assert.match(
            lines[3] ?? '',
            new RegExp(`^${c.name} nack: failure to process message : ZDS_ERR_PROTOCOL: ${c.why.source}`),
          );
          assert.equal(lines[4], 'eof after a protocol error');
          assert.equal(lines.length, 5, agent.output());

          const [code] = await ztExit;
          assert.equal(code, 1, zt.output());
          const fatal = zt
            .output()
            .split('\n')
            .filter((l) => l.includes('"cannot go on; exiting"'));
          assert.equal(fatal.length, 1, zt.output());
          const entry = JSON.parse(fatal[0]!) as { level?: string; error?: string };
          assert.equal(entry.level, 'fatal');
          assert.match(entry.error ?? '', new RegExp(`^ZDS_ERR_PROTOCOL: ${c.why.source}`), fatal[0]);
        } finally {
          agent.proc.kill();
          await zt.stop('SIGKILL');
        }
      },
    );
  }
});
