/**
 * The API section's load generator: one phase (create, list or watch) against a running `amesh apiserver`, in a
 * process of its own so that no phase inherits another's heap and sockets. It speaks plain HTTPS with keep-alive
 * connections (the JSON over HTTP/1.1 that client-go and @kubernetes/client-node send to this server), written
 * by hand so the client's own overhead stays small and visible: a list is timed to the end of JSON.parse, as an
 * informer's relist would need it, and nothing else runs in between.
 *
 * node dist/bench/api-load.js create|list|watch KUBECONFIG APISERVER_PID
 * prints the phase's figures as one JSON object on stdout.
 */
import https from 'node:https';
import type http from 'node:http';
import { loadKubeConfig } from '../src/kube/kube-config.js';
import { cpuSeconds, median, quantile, runQueueSeconds } from './proc-stats.js';

/** The pods the list phase lists: the scale the API server's aims are set for, on one machine. */
const LIST_PODS = 10_000;
/** Namespaces the pods are spread over, as a few applications would be. */
const POD_NAMESPACES = ['bench-a', 'bench-b', 'bench-c', 'bench-d'] as const;
/** Where the watch phase writes (empty until then, so its writes are the only events). */
const WATCH_NAMESPACE = 'bench-watch';
/** Creators in flight: a controller-manager's worth of concurrent writers (client-go's default QPS burst is 10–100). */
const CREATE_CONCURRENCY = 64;
/** Lists timed per round; the round's figure is their median. */
const LIST_REPEATS = 5;
/** Concurrent watchers of all pods: the informers of istiod, the node agents and a few controllers. */
const WATCHERS = 50;
/**
 * Writes during the watch phase, paced at a steady rate well below the create capacity so that the delay
 * measured is the fan-out's, not a write queue's.
 */
const WATCH_WRITES = 500;
const WATCH_WRITES_PER_SEC = 100;
/** A watch phase whose events have not all arrived by then has lost some: the bench fails rather than waits. */
const WATCH_DEADLINE_MS = 60_000;

export interface CreateFigures {
  pods: number;
  concurrency: number;
  createsPerSec: number;
  createP50Ms: number;
  createP99Ms: number;
  /** The API server's CPU seconds per 1,000 creates. */
  serverCpuPer1000: number;
}

export interface ListFigures {
  pods: number;
  listBytes: number;
  /** Request sent to body parsed, median of LIST_REPEATS. */
  listMs: number;
  /** Request sent to the first byte of the body: the server's share (it serialises the whole list before sending). */
  listFirstByteMs: number;
  /** The load generator's JSON.parse of the body. */
  listParseMs: number;
  serverCpuPerList: number;
}

export interface WatchFigures {
  watchers: number;
  writes: number;
  writesPerSec: number;
  /** Delay from the moment a create was sent to its event's arrival at a watcher, over every (write, watcher) pair. */
  sendToEventP50Ms: number;
  sendToEventP99Ms: number;
  /** Delay from the create's acknowledgement (response read) to its event's arrival; negative when the event came first. */
  ackToEventP50Ms: number;
  ackToEventP99Ms: number;
  writeP99Ms: number;
  serverCpuSec: number;
  /** Time the API server's main thread waited for a core during the phase (host contention, not its own work). */
  serverRunQueueSec: number;
  /** The same for this process, where the writes are sent and the events parsed. */
  loadRunQueueSec: number;
}

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** A realistic pod as a Deployment's ReplicaSet would create it (~1.5 KB of JSON once the server defaults it). */
function benchPod(namespace: string, name: string, i: number): object {
  const app = `app-${String(i % 50)}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: {
        app,
        version: 'v1',
        'pod-template-hash': '7d9f8b6c5d',
        'service.istio.io/canonical-name': app,
        'service.istio.io/canonical-revision': 'v1',
      },
      annotations: {
        'ambient.istio.io/redirection': 'enabled',
        'kubectl.kubernetes.io/default-container': app,
        'prometheus.io/port': '9090',
        'prometheus.io/scrape': 'true',
      },
    },
    spec: {
      nodeName: `node-${String(i % 8)}`,
      serviceAccountName: app,
      containers: [
        {
          name: app,
          image: `registry.example.com/bench/${app}:1.4.2`,
          args: ['--port=8080', '--metrics-port=9090'],
          ports: [
            { name: 'http', containerPort: 8080 },
            { name: 'http-metrics', containerPort: 9090 },
          ],
          env: [
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'LOG_LEVEL', value: 'info' },
          ],
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
          readinessProbe: { httpGet: { path: '/healthz', port: 8080 } },
          volumeMounts: [
            { name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true },
          ],
        },
      ],
      volumes: [
        {
          name: 'kube-api-access',
          projected: {
            sources: [
              { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            ],
          },
        },
      ],
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
    },
  };
}

interface Reply {
  status: number;
  body: string;
  firstByteMs: number;
}

/** The admin user's HTTPS access to the API server, over a pool of keep-alive connections. */
class ApiClient {
  private constructor(
    private readonly base: URL,
    private readonly agent: https.Agent,
    private readonly headers: http.OutgoingHttpHeaders,
  ) {}

  static async open(kubeconfig: string, maxSockets: number): Promise<ApiClient> {
    const kc = loadKubeConfig(kubeconfig);
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    const agent = new https.Agent({ keepAlive: true, maxSockets, ca: opts.ca });
    return new ApiClient(new URL(kc.getCurrentCluster()?.server ?? ''), agent, {
      ...(opts.headers as http.OutgoingHttpHeaders),
      accept: 'application/json',
    });
  }

  private send(method: string, path: string, body?: string): http.ClientRequest {
    const headers =
      body === undefined
        ? this.headers
        : { ...this.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = https.request({
      host: this.base.hostname,
      port: this.base.port,
      method,
      path,
      agent: this.agent,
      headers,
    });
    req.end(body);
    return req;
  }

  request(method: string, path: string, body?: string): Promise<Reply> {
    const t0 = nowMs();
    return new Promise((resolve, reject) => {
      const req = this.send(method, path, body);
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let firstByteMs = -1;
        res.on('data', (c: Buffer) => {
          if (firstByteMs < 0) firstByteMs = nowMs() - t0;
          chunks.push(c);
        });
        res.on('error', reject);
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), firstByteMs }),
        );
      });
    });
  }

  /** A request whose answer must be `status`; anything else fails the bench with the server's Status. */
  async expect(status: number, method: string, path: string, body?: string): Promise<Reply> {
    const r = await this.request(method, path, body);
    if (r.status !== status) throw new Error(`${method} ${path}: ${String(r.status)} ${r.body.slice(0, 500)}`);
    return r;
  }

  /** A watch stream: `onLine` gets each event line as it arrives; resolves once the response headers are in. */
  watch(path: string, onLine: (line: string) => void): Promise<http.ClientRequest> {
    return new Promise((resolve, reject) => {
      const req = this.send('GET', path);
      req.on('error', reject);
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`watch ${path}: ${String(res.statusCode)}`));
          return;
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (s: string) => {
          buf += s;
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            onLine(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
          }
        });
        resolve(req);
      });
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

const podsPath = (ns: string): string => `/api/v1/namespaces/${ns}/pods`;

/** Creates LIST_PODS pods across POD_NAMESPACES with CREATE_CONCURRENCY in flight; the rate is over all of them. */
async function createPhase(api: ApiClient, pid: number): Promise<CreateFigures> {
  for (const ns of [...POD_NAMESPACES, WATCH_NAMESPACE])
    await api.expect(201, 'POST', '/api/v1/namespaces', JSON.stringify({ metadata: { name: ns } }));
  // The connections' TLS handshakes are made before the clock starts.
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, () => api.expect(200, 'GET', '/version')));
  const latencies: number[] = [];
  let next = 0;
  const cpu0 = cpuSeconds([pid]);
  const start = nowMs();
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      for (let i = next++; i < LIST_PODS; i = next++) {
        const ns = POD_NAMESPACES[i % POD_NAMESPACES.length]!;
        const t0 = nowMs();
        await api.expect(201, 'POST', podsPath(ns), JSON.stringify(benchPod(ns, `pod-${String(i)}`, i)));
        latencies.push(nowMs() - t0);
      }
    }),
  );
  const secs = (nowMs() - start) / 1000;
  return {
    pods: LIST_PODS,
    concurrency: CREATE_CONCURRENCY,
    createsPerSec: LIST_PODS / secs,
    createP50Ms: quantile(latencies, 0.5),
    createP99Ms: quantile(latencies, 0.99),
    serverCpuPer1000: ((cpuSeconds([pid]) - cpu0) / LIST_PODS) * 1000,
  };
}

/** `GET /api/v1/pods` LIST_REPEATS times on one warm connection, each read to its end and parsed. */
async function listPhase(api: ApiClient, pid: number): Promise<ListFigures> {
  await api.expect(200, 'GET', '/version');
  const runs: { ms: number; firstByteMs: number; parseMs: number; bytes: number; cpu: number }[] = [];
  let pods = 0;
  for (let r = 0; r < LIST_REPEATS; r++) {
    const cpu0 = cpuSeconds([pid]);
    const t0 = nowMs();
    const reply = await api.expect(200, 'GET', '/api/v1/pods');
    const t1 = nowMs();
    const list = JSON.parse(reply.body) as { items: unknown[] };
    const t2 = nowMs();
    pods = list.items.length;
    runs.push({
      ms: t2 - t0,
      firstByteMs: reply.firstByteMs,
      parseMs: t2 - t1,
      bytes: Buffer.byteLength(reply.body),
      cpu: cpuSeconds([pid]) - cpu0,
    });
  }
  return {
    pods,
    listBytes: runs[0]!.bytes,
    listMs: median(runs.map((r) => r.ms)),
    listFirstByteMs: median(runs.map((r) => r.firstByteMs)),
    listParseMs: median(runs.map((r) => r.parseMs)),
    serverCpuPerList: median(runs.map((r) => r.cpu)),
  };
}

/**
 * WATCHERS watches of all pods from the current resourceVersion, then WATCH_WRITES creates paced at
 * WATCH_WRITES_PER_SEC. For every (write, watcher) pair: the delay from the create's send, and from its
 * acknowledgement, to the event's arrival at that watcher (one clock: the writer and the watchers share this process).
 */
async function watchPhase(api: ApiClient, pid: number): Promise<WatchFigures> {
  const rv = (
    JSON.parse((await api.expect(200, 'GET', podsPath(WATCH_NAMESPACE))).body) as {
      metadata: { resourceVersion: string };
    }
  ).metadata.resourceVersion;
  const sent = new Float64Array(WATCH_WRITES);
  const acked = new Float64Array(WATCH_WRITES);
  const arrived = Array.from({ length: WATCHERS }, () => new Float64Array(WATCH_WRITES).fill(-1));
  let missing = WATCHERS * WATCH_WRITES;
  let allArrived: () => void = () => undefined;
  const done = new Promise<void>((r) => (allArrived = r));
  const streams = await Promise.all(
    arrived.map((times) =>
      api.watch(`/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`, (line) => {
        const at = nowMs();
        const e = JSON.parse(line) as { type: string; object: { metadata: { name: string; namespace: string } } };
        if (e.type !== 'ADDED' || e.object.metadata.namespace !== WATCH_NAMESPACE) return;
        const i = Number(e.object.metadata.name.slice('w-'.length));
        if (times[i]! < 0) {
          times[i] = at;
          if (--missing === 0) allArrived();
        }
      }),
    ),
  );
  const cpu0 = cpuSeconds([pid]);
  const wait0 = [runQueueSeconds(pid), runQueueSeconds(process.pid)];
  const start = nowMs();
  const writes: Promise<void>[] = [];
  for (let i = 0; i < WATCH_WRITES; i++) {
    const due = start + (i * 1000) / WATCH_WRITES_PER_SEC;
    if (due > nowMs()) await new Promise((r) => setTimeout(r, due - nowMs()));
    sent[i] = nowMs();
    writes.push(
      api
        .expect(201, 'POST', podsPath(WATCH_NAMESPACE), JSON.stringify(benchPod(WATCH_NAMESPACE, `w-${String(i)}`, i)))
        .then(() => {
          acked[i] = nowMs();
        }),
    );
  }
  await Promise.all(writes);
  const deadline = setTimeout(() => {
    process.stderr.write(
      `watch phase: ${String(missing)} of ${String(WATCHERS * WATCH_WRITES)} events never arrived\n`,
    );
    process.exit(1);
  }, WATCH_DEADLINE_MS);
  await done;
  clearTimeout(deadline);
  const serverCpuSec = cpuSeconds([pid]) - cpu0;
  const [serverRunQueueSec, loadRunQueueSec] = [
    runQueueSeconds(pid) - wait0[0]!,
    runQueueSeconds(process.pid) - wait0[1]!,
  ];
  for (const s of streams) s.destroy();
  const fromSend: number[] = [];
  const fromAck: number[] = [];
  for (const times of arrived) {
    for (let i = 0; i < WATCH_WRITES; i++) {
      fromSend.push(times[i]! - sent[i]!);
      fromAck.push(times[i]! - acked[i]!);
    }
  }
  const writeLatencies = Array.from(sent, (s, i) => acked[i]! - s);
  return {
    watchers: WATCHERS,
    writes: WATCH_WRITES,
    writesPerSec: WATCH_WRITES_PER_SEC,
    sendToEventP50Ms: quantile(fromSend, 0.5),
    sendToEventP99Ms: quantile(fromSend, 0.99),
    ackToEventP50Ms: quantile(fromAck, 0.5),
    ackToEventP99Ms: quantile(fromAck, 0.99),
    writeP99Ms: quantile(writeLatencies, 0.99),
    serverCpuSec,
    serverRunQueueSec,
    loadRunQueueSec,
  };
}

const PHASES = { create: createPhase, list: listPhase, watch: watchPhase } as const;
/** Connections each phase may open: one per creator, one for the lists, one per watcher plus a few for the writes. */
const SOCKETS = { create: CREATE_CONCURRENCY, list: 1, watch: WATCHERS + 16 } as const;
export type ApiPhase = keyof typeof PHASES;

const [phase, kubeconfig, pid] = process.argv.slice(2) as [ApiPhase, string, string];
const api = await ApiClient.open(kubeconfig, SOCKETS[phase]);
try {
  process.stdout.write(JSON.stringify(await PHASES[phase](api, Number(pid))));
} finally {
  api.close();
}
