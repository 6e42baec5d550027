/**
 * The README's main job: `amesh up --dataplane ambient` on examples/mesh (copied, since the tour edits its
 * policy), then a tour of what ambient mode does for an unchanged app. frontend/web on node1 runs the host's
 * `curl` to the Service echo.backend, whose pods run on node2; iptables in web's network namespace send it to
 * node1's ztunnel, which carries it over HBONE (mTLS on 15008) to node2's. The tour shows what the echo pods
 * saw, the SPIFFE identities node2's ztunnel verified, a policy edit that denies the same request, and the
 * metrics; then it tears the cluster down (or, with `keep`, leaves it up until Ctrl-C).
 */
import { cp, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { keepRunningWithoutConsole } from '../lib/console-output.js';
import { describeError, MeshError } from '../lib/errors.js';
import { HBONE_PORT, OUTBOUND_CAPTURE_PORT, ZTUNNEL_STATS_PORT } from '../lib/istio-ports.js';
import { onStopSignal } from '../lib/stop-signals.js';
import { ameshInvocation } from '../up/amesh-invocation.js';
import { Cluster } from '../up/cluster.js';
import { clusterTable } from '../up/cluster-table.js';
import { requireRoot } from '../up/require-root.js';
import { runCommand, type CommandResult } from '../up/run-command.js';
import { loadUpConfig } from '../up/up-config.js';
import { examplesDir } from './examples-dir.js';
import { l7Tour, type WebCurl } from './l7-tour.js';

/** How long a change (a new policy, a pod's workload) may take to reach both ztunnels. */
const PROPAGATION_DEADLINE_MS = 30_000;
const RETRY_MS = 250;
/** curl's own limit per request, so a dropped connection never stalls the tour. */
const CURL_MAX_SECONDS = '5';
const REQUESTS = 4;
const CLIENT = { namespace: 'frontend', pod: 'web', principal: 'spiffe://cluster.local/ns/frontend/sa/web' } as const;
const SERVICE_URL = 'http://echo.backend/';
const SERVER_NODE = 'node2';
const DENIED_PRINCIPAL = 'cluster.local/ns/frontend/sa/admin';
/** The policy file of examples/mesh that the tour edits. */
const POLICIES = 'policies.yaml';

export interface AmbientDemoOptions {
  readonly keep: boolean;
  readonly dataDir: string;
  /** The cluster's name (it prefixes the network namespaces and links). */
  readonly name: string;
  /** Then the L7 step: a waypoint, routes, L7 policy and JWT (`l7-tour.ts`). */
  readonly l7: boolean;
}

const say = (s: string): void => void process.stdout.write(`${s}\n`);
const indent = (text: string): string =>
  text
    .trimEnd()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');

function stepFailed(step: string, detail: string): MeshError {
  return new MeshError('DEMO_ERR_STEP', `${step}: ${detail}`);
}

/** Retries `attempt` until it returns a value, or fails the step with the last reason it gave. */
async function until<T>(
  step: string,
  attempt: () => Promise<T | string>,
  deadlineMs = PROPAGATION_DEADLINE_MS,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const r = await attempt();
    if (typeof r !== 'string') return r;
    if (Date.now() > deadline) throw stepFailed(step, r);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/** A field of a text-format log line: `key=value`, the value JSON-quoted when it has spaces. */
function logField(line: string, key: string): string {
  const raw = new RegExp(`(?:^|\\s)${key.replace('.', '\\.')}=("(?:[^"\\\\]|\\\\.)*"|\\S+)`).exec(line)?.[1] ?? '?';
  return raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
}

interface EchoAnswer {
  hostname: string;
  peer: string;
}

export async function runAmbientDemo(o: AmbientDemoOptions): Promise<void> {
  keepRunningWithoutConsole();
  requireRoot('amesh demo', 'run it as root; amesh demo --socks5 is the tour that needs no root');
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-demo-'));
  const config = path.join(dir, 'mesh');
  await cp(examplesDir('mesh'), config, { recursive: true });
  const cfg = loadUpConfig({ configDir: config, dataDir: o.dataDir, name: o.name, dataplane: 'ambient' });
  say(
    `==> amesh up: the API server and ${String(cfg.nodes)} nodes, then amesh install --set profile=ambient (istiod, and a node agent and a ztunnel on each node), and the pods of ${config} (copied from examples/mesh)`,
  );
  let cluster: Cluster | undefined;
  let starting = true;
  let interrupted = false;
  /** Set while a kept cluster waits for Ctrl-C: the signal ends the wait, and the teardown follows. */
  let endKeep: (() => void) | undefined;
  const teardownAndExit = async (): Promise<void> => {
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
    process.exit(130);
  };
  // Ctrl-C while the cluster starts waits for the start to finish (or fail and clean up), so nothing is left half made.
  onStopSignal(() => {
    interrupted = true;
    if (endKeep !== undefined) return endKeep();
    say('==> interrupted: tearing the cluster down');
    if (!starting) void teardownAndExit();
  });
  let failure: Error | undefined;
  try {
    cluster = await Cluster.start(cfg, (l) => say(`    ${l}`), {
      hostTools: [{ cmd: 'curl', pkg: 'curl', why: "the web pod's client" }],
    });
    starting = false;
    if (interrupted) return await teardownAndExit();
    await tour(cluster, config);
    if (o.l7) {
      await restoreAllowPolicy(cluster, config);
      const { record } = await cluster.dataDir.sandbox(CLIENT.namespace, CLIENT.pod);
      const curl: WebCurl = (...args) =>
        runCommand('ip', [
          'netns',
          'exec',
          record.netns,
          'curl',
          '-sS',
          '--max-time',
          CURL_MAX_SECONDS,
          ...(args.some((a) => a.startsWith('http://')) ? args : [...args, SERVICE_URL]),
        ]);
      await l7Tour(cluster, config, curl, { say, until });
    }
  } catch (e) {
    starting = false;
    if (interrupted) return await teardownAndExit();
    failure = e instanceof Error ? e : new Error(String(e));
  }
  if (interrupted) return;
  if (o.keep && cluster !== undefined) {
    if (failure !== undefined) say(`==> ${describeError(failure)}`);
    await restoreAllowPolicy(cluster, config).catch((e: unknown) => say(`==> ${describeError(e)}`));
    say(
      `==> the cluster keeps running: kubectl --kubeconfig ${cluster.dataDir.kubeconfig} get pods -A -o wide; ${ameshInvocation()} exec --data-dir ${cluster.dataDir.root} ${CLIENT.namespace}/${CLIENT.pod} -- curl -s ${SERVICE_URL}; edit ${config} and watch it apply. Ctrl-C tears it down`,
    );
    await new Promise<void>((resolve) => (endKeep = resolve));
  }
  say('==> tearing the cluster down');
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
  say('    nothing is left: no network namespace, link, route, iptables rule, ipset or process');
  if (failure !== undefined) throw failure;
}

/** The tour's request: curl in the web pod's network namespace, as the unchanged app would send it. */
async function webCurl(cluster: Cluster): Promise<() => Promise<CommandResult>> {
  const { record } = await cluster.dataDir.sandbox(CLIENT.namespace, CLIENT.pod);
  return () =>
    runCommand('ip', ['netns', 'exec', record.netns, 'curl', '-sS', '--max-time', CURL_MAX_SECONDS, SERVICE_URL]);
}

/** Undoes the tour's policy edit before a kept cluster is handed over, and waits until web is let through again. */
async function restoreAllowPolicy(cluster: Cluster, config: string): Promise<void> {
  const policies = path.join(config, POLICIES);
  const original = await readFile(path.join(examplesDir('mesh'), POLICIES), 'utf8');
  if ((await readFile(policies, 'utf8')) === original) return;
  say(`==> restoring ${policies}: backend's ALLOW policy names web again`);
  await writeFile(`${policies}.tmp`, original);
  await rename(`${policies}.tmp`, policies);
  const curl = await webCurl(cluster);
  await until('the restored policy allows', async () => {
    const r = await curl();
    return r.code === 0 ? r : `curl still fails (exit ${String(r.code)}): ${r.stderr.trim()}`;
  });
  say(`    the same curl succeeds again`);
}

async function tour(cluster: Cluster, config: string): Promise<void> {
  if (!(await cluster.settle()))
    throw stepFailed(
      'waiting for the pods',
      `not every pod is ready:\n${clusterTable(await cluster.snapshot(), 'table')}`,
    );
  const snapshot = await cluster.snapshot();
  say('==> the cluster (kubectl get nodes,pods -A -o wide shows the same):');
  say(indent(clusterTable(snapshot, 'table')));
  const web = snapshot.pods.find((p) => p.metadata?.namespace === CLIENT.namespace && p.metadata.name === CLIENT.pod);
  // The ztunnel DaemonSet's pod on the server's node.
  const ztunnel = snapshot.pods.find(
    (p) =>
      p.metadata?.namespace === 'istio-system' &&
      p.metadata.labels?.['app'] === 'ztunnel' &&
      p.spec?.nodeName === SERVER_NODE,
  );
  const ztunnelPod = ztunnel?.metadata?.name ?? '?';
  const metricsUrl = `http://${ztunnel?.status?.podIP ?? ''}:${ZTUNNEL_STATS_PORT}/metrics`;
  const webIp = web?.status?.podIP ?? '';
  const curl = await webCurl(cluster);

  say(
    `==> ${CLIENT.namespace}/${CLIENT.pod} (${webIp}, ${web?.spec?.nodeName ?? '?'}) runs an unchanged curl ${SERVICE_URL}: the Service's pods are on ${SERVER_NODE}`,
  );
  say(
    `    ${CLIENT.pod}'s iptables send it to ${web?.spec?.nodeName ?? '?'}'s ztunnel (${OUTBOUND_CAPTURE_PORT}), which opens HBONE (mTLS 1.3, ${HBONE_PORT}) to ${SERVER_NODE}'s; the name is answered by the ztunnel's DNS proxy`,
  );
  for (let i = 0; i < REQUESTS; i++) {
    const answer = await until('curl through the mesh', async () => {
      const r = await curl();
      if (r.code !== 0) return `curl exited with ${String(r.code)}: ${r.stderr.trim()}`;
      try {
        return JSON.parse(r.stdout) as EchoAnswer;
      } catch {
        return `not the echo server's answer: ${r.stdout.slice(0, 200)}`;
      }
    });
    say(
      `    ${answer.hostname} answered; it saw the client at ${answer.peer} (${CLIENT.pod}'s own address: ztunnel keeps the source)`,
    );
  }

  const opened = await until(`${SERVER_NODE}'s ztunnel metrics`, async () => {
    const text = await fetch(metricsUrl).then(
      (r) => r.text(),
      (e: unknown) => `cannot fetch ${metricsUrl}: ${describeError(e)}`,
    );
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('istio_tcp_connections_opened_total{') &&
          l.includes('reporter="destination"') &&
          l.includes(`source_principal="${CLIENT.principal}"`),
      );
    return line === undefined ? `no connection from ${CLIENT.principal} in ${metricsUrl}` : { line, text };
  });
  const label = (k: string): string => new RegExp(`${k}="([^"]*)"`).exec(opened.line)?.[1] ?? '?';
  say(`==> ${SERVER_NODE}'s ztunnel verified both ends (${metricsUrl}):`);
  say(`    source_principal=${label('source_principal')}`);
  say(
    `    destination_principal=${label('destination_principal')} (connection_security_policy=${label('connection_security_policy')})`,
  );

  const policies = path.join(config, POLICIES);
  say(`==> editing ${policies}: backend's ALLOW policy now names ${DENIED_PRINCIPAL} instead of web`);
  const text = await readFile(policies, 'utf8');
  await writeFile(`${policies}.tmp`, text.replace('cluster.local/ns/frontend/sa/web', DENIED_PRINCIPAL));
  await rename(`${policies}.tmp`, policies);
  const denied = await until('the edited policy denies', async () => {
    const r = await curl();
    return r.code === 0 ? 'curl still succeeds' : r;
  });
  say(`    the same curl now fails (exit ${String(denied.code)}): ${denied.stderr.trim()}`);
  const log = await readFile(
    path.join((await cluster.dataDir.sandbox('istio-system', ztunnelPod)).dir, 'istio-proxy.log'),
    'utf8',
  );
  const why = log
    .split('\n')
    .filter((l) => l.includes('connection complete') && l.includes('error'))
    .at(-1);
  if (why !== undefined) {
    say(
      `    ${SERVER_NODE}'s ztunnel logged it (${ameshInvocation()} logs --data-dir ${cluster.dataDir.root} istio-system/${ztunnelPod}):`,
    );
    for (const key of ['src.identity', 'dst.identity', 'error']) say(`      ${key}=${logField(why, key)}`);
  }

  say(`==> metrics from ${SERVER_NODE}'s ztunnel (reporter="destination"; some labels left out):`);
  const metrics = await (await fetch(metricsUrl)).text();
  for (const l of metrics
    .split('\n')
    .filter(
      (x) =>
        /^istio_tcp_(connections_opened|connections_failed)_total\{/.test(x) && x.includes('reporter="destination"'),
    )) {
    say(
      `    ${l.replace(/(source_|destination_)(canonical_revision|app|version|cluster|service_namespace|canonical_service|workload_namespace)="[^"]*",/g, '')}`,
    );
  }
}
