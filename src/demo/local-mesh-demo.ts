import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEchoServer } from '../echo/echo-server.js';
import { runEchoClient } from '../echo/echo-client.js';
import { ameshCommand } from '../up/amesh-command.js';
import { spawnZtunnel, STEP_DEADLINE_MS } from './ztunnel-process.js';
import { examplesDir } from './examples-dir.js';
import { EMBEDDED_API_DIR } from '../istiod/registry/config-dir-api.js';
import { ISTIOD_GRPC_PORT, ISTIOD_MONITORING_PORT, ISTIOD_WEBHOOK_PORT, SOCKS5_PORT } from '../lib/istio-ports.js';

/** Batches of four calls to make until the answers include the other node's pod (1 in 16 batches miss it). */
const DEMO_MAX_BATCHES = 8;
/** istiod on loopback, and the SOCKS5 listener of frontend/web-0's ztunnel. */
const ISTIOD_GRPC = `127.0.0.1:${ISTIOD_GRPC_PORT}`;
const ISTIOD_MONITORING = `127.0.0.1:${ISTIOD_MONITORING_PORT}`;
const WEB_0_SOCKS5 = `127.0.10.1:${SOCKS5_PORT}`;

const say = (s: string): void => {
  process.stdout.write(s + '\n');
};

async function run(args: string[]): Promise<string> {
  const { cmd, args: base } = ameshCommand();
  const p = spawn(cmd, [...base, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => p.once('exit', r));
  if (code !== 0) throw new Error(`amesh ${args.join(' ')} exited with ${String(code)}`);
  return out.trim();
}

async function waitHttp(url: string, what: string, timeoutMs = STEP_DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not become ready within ${timeoutMs / 1000}s (${url})`);
}

/** Shows the pods istiod applied to its embedded API server, with kubectl when this machine has it. */
async function showPods(kubeconfig: string): Promise<void> {
  const command = ['kubectl', '--kubeconfig', kubeconfig, 'get', 'pods', '-A', '-o', 'wide'];
  say(`==> istiod applied the directory to its embedded Kubernetes API: ${command.join(' ')}`);
  const kubectl = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  kubectl.stdout.on('data', (d: Buffer) => (out += d.toString()));
  kubectl.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | string>((r) => {
    kubectl.once('error', (e: NodeJS.ErrnoException) => r(e.code ?? e.message));
    kubectl.once('close', (c) => r(c ?? 'a signal'));
  });
  if (code === 'ENOENT') say('    (kubectl is not installed here; any kubectl works with that kubeconfig)');
  else for (const l of out.trimEnd().split('\n')) say('    ' + l);
}

/**
 * The tour that needs no root (`amesh demo --socks5`): istiod serving a manifest directory (examples/local-mesh),
 * applied to its embedded Kubernetes API, to two ztunnels (two "nodes"), the pods as kubectl lists them, traffic through the mesh, a live policy edit that denies it, metrics, then a clean stop.
 */
export async function runLocalMeshDemo(o: { keep: boolean }): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-demo-'));
  const config = path.join(dir, 'config');
  const state = path.join(dir, 'state');
  await cp(examplesDir('local-mesh'), config, { recursive: true });
  say(
    `==> istiod serves ${config} (copied from examples/local-mesh: 2 namespaces, 3 pods, 1 service, an ALLOW policy, STRICT mTLS)`,
  );
  const { cmd, args } = ameshCommand();
  const istiod: ChildProcess = spawn(
    cmd,
    [
      ...args,
      'istiod',
      '--config-dir',
      config,
      '--state-dir',
      state,
      '--grpc-address',
      ISTIOD_GRPC,
      '--monitoring-address',
      ISTIOD_MONITORING,
      '--webhook-address',
      `127.0.0.1:${ISTIOD_WEBHOOK_PORT}`,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const echos = await Promise.all([
    startEchoServer('127.0.10.2', 8080, 'echo-0'),
    startEchoServer('127.0.10.3', 8080, 'echo-1'),
  ]);
  const zts: ReturnType<typeof spawnZtunnel>[] = [];
  try {
    await waitHttp(`http://${ISTIOD_MONITORING}/ready`, 'istiod');
    for (const [node, ip] of [
      ['node1', '127.0.0.1'],
      ['node2', '127.0.0.2'],
    ] as const) {
      const tokenFile = path.join(dir, `${node}.token`);
      await writeFile(
        tokenFile,
        await run([
          'istiod',
          'token',
          '--namespace',
          'istio-system',
          '--service-account',
          'ztunnel',
          '--node',
          node,
          '--state-dir',
          state,
        ]),
      );
      zts.push(
        spawnZtunnel({
          localConfig: '',
          nodeName: node,
          controlIp: ip,
          env: {
            LOCAL_XDS_PATH: '',
            XDS_ADDRESS: `https://${ISTIOD_GRPC}`,
            CA_ADDRESS: `https://${ISTIOD_GRPC}`,
            // The demo's client is a process on this host, sending as web-0 from web-0's IP.
            UNSTABLE_ENABLE_SOCKS5: 'true',
            ALT_XDS_HOSTNAME: 'istiod.istio-system.svc',
            ALT_CA_HOSTNAME: 'istiod.istio-system.svc',
            XDS_ROOT_CA: path.join(state, 'root-cert.pem'),
            CA_ROOT_CA: path.join(state, 'root-cert.pem'),
            AUTH_TOKEN: tokenFile,
            POD_NAME: `ztunnel-${node}`,
            POD_NAMESPACE: 'istio-system',
            LOG_FORMAT: 'text',
          },
        }),
      );
    }
    say(
      `==> two ztunnels (node1: admin ${zts[0]?.admin ?? ''}, node2: admin ${zts[1]?.admin ?? ''}) get workloads, policies and certificates from istiod`,
    );
    await Promise.all(zts.map((z) => z.waitReady()));
    await showPods(path.join(state, EMBEDDED_API_DIR, 'kubeconfig'));
    say(
      `==> frontend/web-0 (127.0.10.1) calls echo.backend (VIP 10.96.0.10:80) through SOCKS5 ${WEB_0_SOCKS5}, over HBONE`,
    );
    // ztunnel picks a service endpoint at random: call until echo-0 on node2 has answered too, so the tour can
    // show what the other node's ztunnel saw.
    let crossedNodes = false;
    for (let batch = 0; batch < DEMO_MAX_BATCHES && !crossedNodes; batch++) {
      const results = await runEchoClient({
        target: '10.96.0.10:80',
        socks5: WEB_0_SOCKS5,
        source: '127.0.10.1',
        count: 4,
        http: true,
        message: '',
        timeoutMs: 5000,
      });
      for (const r of results) {
        if (!r.ok) throw new Error(`request through the mesh failed: ${r.error ?? ''}`);
        const seen = JSON.parse(r.response ?? '{}') as { hostname?: string; peer?: string; local?: string };
        if (seen.hostname === 'echo-0') crossedNodes = true;
        say(`    ${seen.hostname ?? '?'} on ${seen.local ?? '?'} answered; it saw the client at ${seen.peer ?? '?'}`);
      }
    }
    const m2 = await (await fetch(`http://${zts[1]?.metrics ?? ''}/metrics`)).text();
    const line = m2
      .split('\n')
      .find((l) => l.startsWith('istio_tcp_connections_opened_total{') && l.includes('reporter="destination"'));
    const label = (k: string): string => new RegExp(`${k}="([^"]*)"`).exec(line ?? '')?.[1] ?? '?';
    say(
      `    node2's ztunnel authenticated the client as ${label('source_principal')} (connection_security_policy=${label('connection_security_policy')})`,
    );
    const policies = path.join(config, 'policies.yaml');
    say(`==> editing ${policies}: the ALLOW policy now names another service account`);
    const text = await readFile(policies, 'utf8');
    await writeFile(
      `${policies}.tmp`,
      text.replace('cluster.local/ns/frontend/sa/web', 'cluster.local/ns/frontend/sa/admin'),
    );
    await rename(`${policies}.tmp`, policies);
    // Until the edit reaches node2 requests still pass; one in flight when it lands is cut (a late denial). The
    // tour waits for a new request to be refused: SOCKS5 reply 2, "connection not allowed by ruleset".
    let denied = '';
    let last = 'every request still passed';
    for (const deadline = Date.now() + STEP_DEADLINE_MS; denied === '' && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 100));
      const [r] = await runEchoClient({
        target: '10.96.0.10:80',
        socks5: WEB_0_SOCKS5,
        source: '127.0.10.1',
        count: 1,
        http: true,
        message: '',
        timeoutMs: 5000,
      });
      if (r === undefined || r.ok) continue;
      last = r.error ?? 'failed';
      if (/not allowed by ruleset/.test(last)) denied = last;
    }
    if (denied === '')
      throw new Error(`the policy edit did not take effect within ${STEP_DEADLINE_MS / 1000}s (${last})`);
    say(`    the same request is now refused: ${denied}`);
    say('==> metrics excerpt from node2 (reporter="destination"):');
    const m = await (await fetch(`http://${zts[1]?.metrics ?? ''}/metrics`)).text();
    for (const l of m.split('\n').filter((x) => /^istio_tcp_(connections_opened|connections_failed)_total\{/.test(x))) {
      say(
        '    ' +
          l
            .replace(
              /(source_|destination_)(canonical_revision|app|version|cluster|service_namespace|service_name|canonical_service)="[^"]*",/g,
              '',
            )
            .slice(0, 400),
      );
    }
    if (o.keep) {
      say(`==> the mesh keeps running: edit ${config} and watch it change; Ctrl-C stops it`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
  } finally {
    say('==> stopping (SIGTERM: ztunnels drain and exit, then istiod)');
    const codes = await Promise.all(zts.map((z) => z.stop()));
    istiod.kill('SIGTERM');
    await new Promise((r) => (istiod.exitCode !== null ? r(undefined) : istiod.once('exit', r)));
    await Promise.all(echos.map((e) => e.close()));
    await rm(dir, { recursive: true, force: true });
    say(`    ztunnels exited with ${codes.join(', ')}`);
  }
}
