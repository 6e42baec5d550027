import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writePluginCaDir } from '../lib/pki/certificate-authority.js';
import { startEchoServer } from '../echo/echo-server.js';
import { runEchoClient } from '../echo/echo-client.js';
import { spawnZtunnel } from './ztunnel-process.js';

/** Two namespaces on two "nodes": a client on node1, an echo service with one pod on node2. */
export function demoMesh(policies = ''): string {
  return `# amesh demo mesh: ztunnel local config (the field names of ztunnel's /config_dump)
workloads:
- uid: Kubernetes//Pod/frontend/web-0
  name: web-0
  namespace: frontend
  serviceAccount: web
  workloadName: web
  canonicalName: web
  canonicalRevision: v1
  workloadIps: ["127.0.10.1"]
  protocol: HBONE
  node: node1
- uid: Kubernetes//Pod/backend/echo-0
  name: echo-0
  namespace: backend
  serviceAccount: echo
  workloadName: echo
  canonicalName: echo
  canonicalRevision: v1
  workloadIps: ["127.0.10.2"]
  protocol: HBONE
  node: node2
  services:
    backend/echo.backend.svc.cluster.local:
      80: 8080
services:
- name: echo
  namespace: backend
  hostname: echo.backend.svc.cluster.local
  vips: ["/10.96.0.10"]
  ports:
    80: 8080
  canonical: true
policies:${policies === '' ? ' []' : '\n' + policies}
`;
}

const DENY_WEB = `- name: deny-web
  namespace: backend
  scope: Namespace
  action: Deny
  dryRun: false
  rules:
  - - - principals:
        - Exact: cluster.local/ns/frontend/sa/web
`;

const say = (s: string): void => {
  process.stdout.write(s + '\n');
};

/** The README's main job for now: a local mesh, some traffic, a policy deny, metrics, then a clean stop. */
export async function runLocalMeshDemo(o: { keep: boolean }): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-demo-'));
  const ca = path.join(dir, 'ca');
  const mesh = path.join(dir, 'mesh.yaml');
  say(`==> writing a plug-in CA and the mesh config to ${dir}`);
  await writePluginCaDir(ca);
  await writeFile(mesh, demoMesh());
  const echo = await startEchoServer('127.0.10.2', 8080, 'echo-0');
  const z1 = spawnZtunnel({ localConfig: mesh, nodeName: 'node1', localCa: ca, controlIp: '127.0.0.1', env: { LOG_FORMAT: 'text' } });
  const z2 = spawnZtunnel({ localConfig: mesh, nodeName: 'node2', localCa: ca, controlIp: '127.0.0.2', env: { LOG_FORMAT: 'text' } });
  try {
    say('==> starting ztunnel node1 (admin 127.0.0.1:15000) and ztunnel node2 (admin 127.0.0.2:15000)');
    await Promise.all([z1.waitReady(), z2.waitReady()]);
    say('==> web-0 (127.0.10.1) -> echo.backend VIP 10.96.0.10:80, captured by SOCKS5 127.0.10.1:15080, carried over HBONE');
    const [ok] = await runEchoClient({ target: '10.96.0.10:80', socks5: '127.0.10.1:15080', count: 1, http: true, message: '', timeoutMs: 5000 });
    if (ok === undefined || !ok.ok) throw new Error(`request through the mesh failed: ${ok?.error ?? 'no result'}`);
    const seen = JSON.parse(ok.response ?? '{}') as { peer?: string; hostname?: string; local?: string; headers?: Record<string, string> };
    say(`    the echo app (${seen.hostname ?? '?'}) on ${seen.local ?? '?'} saw a connection from ${seen.peer ?? '?'}`);
    const m2 = await (await fetch(`http://${z2.metrics}/metrics`)).text();
    const line = m2.split('\n').find((l) => l.startsWith('istio_tcp_connections_opened_total{') && l.includes('reporter="destination"'));
    const label = (k: string): string => new RegExp(`${k}="([^"]*)"`).exec(line ?? '')?.[1] ?? '?';
    say(`    node2's ztunnel authenticated the client as ${label('source_principal')} (connection_security_policy=${label('connection_security_policy')})`);
    say('==> adding an AuthorizationPolicy that denies frontend/web in namespace backend (the file is watched)');
    await writeFile(mesh, demoMesh(DENY_WEB));
    let denied = '';
    for (let i = 0; i < 50 && denied === ''; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const [r] = await runEchoClient({ target: '10.96.0.10:80', socks5: '127.0.10.1:15080', count: 1, http: true, message: '', timeoutMs: 5000 });
      if (r !== undefined && !r.ok) denied = r.error ?? 'denied';
    }
    if (denied === '') throw new Error('the deny policy did not take effect within 5s');
    say(`    the same request now fails: ${denied}`);
    say('==> metrics excerpt from node2 (reporter="destination"):');
    const m = await (await fetch(`http://${z2.metrics}/metrics`)).text();
    for (const l of m.split('\n').filter((x) => /^istio_tcp_(connections_opened|connections_failed|received_bytes)_total\{/.test(x))) {
      say('    ' + l.replace(/(source_|destination_)(canonical_revision|app|version|cluster|service_namespace|service_name|canonical_service)="[^"]*",/g, '').slice(0, 400));
    }
    if (o.keep) {
      say(`==> the mesh keeps running (config ${mesh}); Ctrl-C stops it`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
  } finally {
    say('==> stopping (SIGTERM: ztunnels drain and exit)');
    const codes = await Promise.all([z1.stop(), z2.stop()]);
    await echo.close();
    await rm(dir, { recursive: true, force: true });
    say(`    ztunnels exited with ${codes.join(', ')}`);
  }
}
