/**
 * The node agent's end of the CNI plugin's hand-over (istio cni/pkg/nodeagent/cni-watcher.go): HTTP/1.1 on the unix
 * socket `<run dir>/pluginevent.sock`, `POST /cmdadd` with Istio's CNIPluginAddEvent. A body that is not the event
 * is 400; the pod is looked up in the agent's informer cache (which may trail the API the plugin just read, so 10
 * more tries 10 ms apart), must still be selected ("unexpectedly not eligible" otherwise), and is added to the mesh
 * with the IPs and netns from the event; 200 once it is captured and ztunnel has it, else 500 with the reason. Each
 * answer counts in `istio_cni_plugin_requests_total{response_code}`.
 */
import { rm } from 'node:fs/promises';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { Counter, type Registry as MetricsRegistry } from 'prom-client';
import { MeshError, describeError, isMeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { addEventPodIps, parseCniPluginAddEvent } from '../plugin/cni-plugin-add-event.js';
import { CNI_ADD_EVENT_PATH } from '../plugin/plugin-event-client.js';
import type { PodDataplane } from './mesh-dataplane.js';

/** Istio's getPodWithRetry: the cache is given this many more chances, this far apart. */
const STALE_CACHE_RETRIES = 10;
const STALE_CACHE_RETRY_MS = 10;
/** Istio reads the whole body; an event is a few hundred bytes, so anything this large is not one. */
const MAX_BODY_BYTES = 1024 * 1024;

/** Finds the pod of an event: throws when it is not cached, undefined when it is not selected for the mesh. */
export type PodLookup = (name: string, namespace: string) => V1Pod | undefined;

export class PluginServer {
  private readonly server: http.Server;
  private readonly requests: Counter<'response_code'>;
  private stopped = false;

  constructor(
    readonly socketPath: string,
    private readonly lookup: PodLookup,
    private readonly dataplane: Pick<PodDataplane, 'addPodToMesh'>,
    metrics: MetricsRegistry,
    private readonly log: Logger,
  ) {
    this.requests = new Counter({
      name: 'istio_cni_plugin_requests_total',
      help: 'The total number of CNI plugin requests handled by the node agent.',
      labelNames: ['response_code'],
      registers: [metrics],
    });
    this.server = http.createServer((req, res) => {
      void this.handle(req).then(({ status, message }) => {
        this.requests.inc({ response_code: String(status) });
        res
          .writeHead(status, { 'content-type': 'text/plain; charset=utf-8' })
          .end(message === '' ? '' : `${message}\n`);
      });
    });
  }

  /** Listens, replacing a socket file a previous agent left (as Istio's pluginlistener does). */
  async start(): Promise<void> {
    try {
      await rm(this.socketPath, { force: true });
      await new Promise<void>((resolve, reject) => {
        this.server.once('error', reject);
        this.server.listen(this.socketPath, () => {
          this.server.off('error', reject);
          resolve();
        });
      });
    } catch (e) {
      throw new MeshError(
        'AGENT_ERR_RUN_DIR',
        `cannot listen for CNI plugin events on ${this.socketPath}: ${describeError(e)}`,
        { cause: e },
      );
    }
    this.log.info({ socket: this.socketPath }, 'listening for CNI plugin events');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (!this.server.listening) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(req: http.IncomingMessage): Promise<{ status: number; message: string }> {
    if (req.method !== 'POST' || req.url !== CNI_ADD_EVENT_PATH) {
      req.resume();
      return { status: 404, message: `only POST ${CNI_ADD_EVENT_PATH} is served here` };
    }
    let body: string;
    try {
      body = await readBody(req);
    } catch (e) {
      return { status: 400, message: describeError(e) };
    }
    let event;
    try {
      event = parseCniPluginAddEvent(body);
    } catch (e) {
      this.log.error({ error: describeError(e) }, 'cannot read a CNI plugin event');
      return { status: 400, message: describeError(e) };
    }
    const pod = `${event.PodNamespace}/${event.PodName}`;
    try {
      const found = await this.podWithRetry(event.PodName, event.PodNamespace);
      await this.dataplane.addPodToMesh(found, addEventPodIps(event), event.Netns);
      return { status: 200, message: '' };
    } catch (e) {
      this.log.error({ pod, error: describeError(e) }, 'failed to handle a CNI add event');
      return { status: 500, message: describeError(e) };
    }
  }

  private async podWithRetry(name: string, namespace: string): Promise<V1Pod> {
    for (let attempt = 0; ; attempt++) {
      let pod: V1Pod | undefined;
      try {
        pod = this.lookup(name, namespace);
      } catch (e) {
        if (!isMeshError(e, 'AGENT_ERR_POD_NOT_FOUND') || attempt >= STALE_CACHE_RETRIES || this.stopped) throw e;
        this.log.warn(
          { pod: `${namespace}/${name}`, retry: attempt + 1 },
          'pod of a CNI event not in the cache yet; retrying',
        );
        await sleep(STALE_CACHE_RETRY_MS);
        continue;
      }
      if (pod === undefined)
        throw new MeshError(
          'AGENT_ERR_NOT_ELIGIBLE',
          `pod ${namespace}/${name} is unexpectedly not eligible for ambient enrollment`,
        );
      return pod;
    }
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        req.destroy();
        reject(new MeshError('AGENT_ERR_BAD_EVENT', `CNI plugin event larger than ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
