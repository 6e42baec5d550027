/**
 * How long one pod edit takes to reach a ztunnel-like delta-xDS client with 10,000 pods in the mesh: through the
 * Kubernetes API (informers, incremental model) and through a manifest directory (a reload re-reads every
 * document, then the applier patches what changed into istiod's embedded API server). Also the longest event-loop stall istiod's process sees during the edits, which is what a
 * certificate request would wait behind. Everything runs in this process (API server, istiod, client), on real
 * sockets.
 *
 * node --import tsx bench/istiod-registry-bench.ts [pods]
 */
import { mkdtemp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import * as k8s from '@kubernetes/client-node';
import type { DeltaDiscoveryResponse } from '../src/api/envoy/service/discovery/v3/discovery_pb.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { startApiServer, startIstiod } from '../test/helpers/in-process.js';
import { openStream } from '../test/helpers/ads-stream.js';
import { requestToken } from '../src/kube/request-token.js';

const PODS = Number(process.argv[2] ?? 10_000);
const EDITS = 10;
/** Requests in flight while the API is filled. */
const FILL_CONCURRENCY = 32;
const ADDRESS = 'type.googleapis.com/istio.workload.Address';
const HOST = '127.0.93.40';

const podIp = (i: number): string => `10.${String(10 + (i >> 16))}.${String((i >> 8) & 255)}.${String(i & 255)}`;
const podYaml = (i: number, version: string): string =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: p${String(i)}, namespace: bench, labels: {app: a${String(i % 50)}, version: "${version}"}}\nspec: {nodeName: n1, containers: [{name: c, image: x}]}\nstatus: {phase: Running, podIP: ${podIp(i)}}\n`;

/** Subscribes to addresses, ACKs everything, and measures how long each `edit` takes to come back as a push naming `uid`. */
async function measure(
  ist: Istiod,
  token: string,
  edit: (n: number) => Promise<void>,
  uid: string,
): Promise<{ ms: number[]; maxStallMs: number }> {
  const root = await readFile(ist.rootCertPath, 'utf8');
  const s = openStream(ist, root, token, HOST);
  const next = async (): Promise<DeltaDiscoveryResponse> => {
    const r = await s.next();
    s.stream.write({ typeUrl: r.typeUrl, responseNonce: r.nonce });
    return r;
  };
  s.stream.write({ typeUrl: ADDRESS });
  const initial = await next();
  if (initial.resources.length < PODS)
    throw new Error(`initial push has ${String(initial.resources.length)} resources`);
  const ms: number[] = [];
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  for (let n = 1; n <= EDITS; n++) {
    const t0 = performance.now();
    await edit(n);
    for (;;) {
      const r = await next();
      if (r.resources.some((x) => x.name === uid)) break;
    }
    ms.push(performance.now() - t0);
  }
  loop.disable();
  s.stream.end();
  return { ms, maxStallMs: loop.max / 1e6 };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const report = (what: string, r: { ms: number[]; maxStallMs: number }): void =>
  console.log(
    `${what}: edit → xDS push median ${median(r.ms).toFixed(0)} ms, max ${Math.max(...r.ms).toFixed(0)} ms; longest event-loop stall ${r.maxStallMs.toFixed(0)} ms`,
  );

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-registry-bench-'));
  try {
    // The manifest directory.
    const config = path.join(dir, 'config');
    await mkdir(config);
    const all = (version: string): string =>
      [
        'apiVersion: v1\nkind: Namespace\nmetadata: {name: bench}\n',
        ...Array.from({ length: PODS }, (_, i) => podYaml(i, i === 0 ? version : 'v0')),
      ].join('---\n');
    await writeFile(path.join(config, 'pods.yaml'), all('v0'));
    const fromDir = await startIstiod(config, path.join(dir, 'dir-state'), { host: HOST });
    const localToken = await fromDir.issuer.issue({
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      audience: 'istio-ca',
      node: 'n1',
    });
    report(
      `manifest directory, ${String(PODS)} pods`,
      await measure(
        fromDir,
        localToken,
        async (n) => {
          await writeFile(path.join(config, '.pods.tmp'), all(`v${String(n)}`));
          await rename(path.join(config, '.pods.tmp'), path.join(config, 'pods.yaml'));
        },
        'Kubernetes//Pod/bench/p0',
      ),
    );
    await fromDir.stop();

    // The Kubernetes API.
    const api = await startApiServer(path.join(dir, 'api'), { listen: `${HOST}:0` });
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'bench' } } });
    await core.createNamespace({ body: { metadata: { name: 'istio-system' } } });
    await core.createNamespacedServiceAccount({ namespace: 'istio-system', body: { metadata: { name: 'ztunnel' } } });
    // An istiod on the API trusts the API's TokenReview, as Istio's does.
    const apiToken = await requestToken(kc, {
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      audience: 'istio-ca',
      ttlSeconds: 3600,
    });
    const t0 = performance.now();
    let nextPod = 0;
    await Promise.all(
      Array.from({ length: FILL_CONCURRENCY }, async () => {
        for (let i = nextPod++; i < PODS; i = nextPod++) {
          const pod = await core.createNamespacedPod({
            namespace: 'bench',
            body: {
              metadata: { name: `p${String(i)}`, labels: { app: `a${String(i % 50)}`, version: 'v0' } },
              spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'x' }] },
            },
          });
          pod.status = { phase: 'Running', podIP: podIp(i) };
          await core.replaceNamespacedPodStatus({ name: `p${String(i)}`, namespace: 'bench', body: pod });
        }
      }),
    );
    console.log(`filled the API with ${String(PODS)} pods in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const t1 = performance.now();
    await core.createNamespacedService({
      namespace: 'bench',
      body: { metadata: { name: 's0' }, spec: { selector: { app: 'a0' }, ports: [{ port: 80 }] } },
    });
    const fromApi = await startIstiod(undefined, path.join(dir, 'api-state'), {
      host: HOST,
      kubeconfig: api.kubeconfigPath,
    });
    const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
    report(
      `Kubernetes API, ${String(PODS)} pods`,
      await measure(
        fromApi,
        apiToken,
        async (n) => {
          if (n === 1)
            console.log(
              `istiod started and synced, first push received: ${((performance.now() - t1) / 1000).toFixed(1)} s`,
            );
          await core.patchNamespacedPod(
            { name: 'p0', namespace: 'bench', body: { metadata: { labels: { version: `v${String(n)}` } } } },
            merge,
          );
        },
        'Kubernetes//Pod/bench/p0',
      ),
    );
    // A Service edit re-derives every workload; the 1/50 of the pods it selects change.
    report(
      `Kubernetes API, ${String(PODS)} pods, Service edit (selects ${String(PODS / 50)})`,
      await measure(
        fromApi,
        apiToken,
        async (n) => {
          await core.patchNamespacedService(
            { name: 's0', namespace: 'bench', body: { spec: { ports: [{ port: 80, targetPort: 8000 + n }] } } },
            merge,
          );
        },
        'Kubernetes//Pod/bench/p0',
      ),
    );
    await fromApi.stop();
    await api.stop();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
