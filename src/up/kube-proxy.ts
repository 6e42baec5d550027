/**
 * kube-proxy's job on the nodes of `amesh up`: Services and EndpointSlices are watched once for the whole cluster,
 * and every change is written to each node's network namespace as one `iptables-restore --noflush` of the rules
 * `proxy-rules.ts` makes (changes that arrive during a sync go into the next one). Each node first gets the jumps
 * from the built-in chains into kube-proxy's, and has bridged traffic pass iptables
 * (`net.bridge.bridge-nf-call-iptables`, which kube-proxy requires of a bridge network): without it, the reply of
 * an endpoint on the client's own bridge would skip the node's conntrack and never be un-DNATed.
 *
 * An ambient pod's traffic never meets these rules first: Istio's in-pod rules send it to ztunnel inside the pod's
 * own namespace, as on a real cluster.
 */
import type { KubeConfig, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { RestartingInformer } from '../kube/informer.js';
import { listJson } from '../kube/list-json.js';
import { describeError, MeshError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import { PROXY_JUMPS, proxyRules, restoreInput, type ProxyRules } from './proxy-rules.js';
import { runCommand } from './run-command.js';

export interface ProxyNode {
  readonly name: string;
  /** The node's network namespace, by name (`ip netns exec`). */
  readonly netns: string;
}

/** Runs a command in a node's namespace, and whether it succeeded. */
async function tryInNetns(netns: string, args: readonly string[]): Promise<boolean> {
  return (await runCommand('ip', ['netns', 'exec', netns, ...args])).code === 0;
}

/** Runs a command in a node's namespace; a failure is UP_ERR_NETWORK naming it and what it said. */
async function inNetns(netns: string, args: readonly string[], stdin?: string): Promise<void> {
  const r = await runCommand('ip', ['netns', 'exec', netns, ...args], stdin === undefined ? {} : { stdin });
  if (r.code !== 0)
    throw new MeshError(
      'UP_ERR_NETWORK',
      `${args.join(' ')} in ${netns} failed: ${r.stderr.trim() || `exit status ${String(r.code)}`}`,
    );
}

export class KubeProxy {
  private readonly services: RestartingInformer<V1Service>;
  private readonly slices: RestartingInformer<V1EndpointSlice>;
  private readonly written = new Map<string, ProxyRules>();
  private syncing = false;
  private dirty = false;
  private idle: Promise<void> = Promise.resolve();
  readonly synced: Promise<void>;

  /** `services` is an informer of the cluster's Services, which this starts and stops. */
  constructor(
    kc: KubeConfig,
    services: RestartingInformer<V1Service>,
    private readonly nodes: readonly ProxyNode[],
    private readonly clusterCidr: string,
    private readonly log: Logger,
  ) {
    const changed = (): void => this.sync();
    const handlers = { add: changed, update: changed, delete: changed };
    this.services = services;
    services.addEventHandler(handlers);
    const slicesPath = '/apis/discovery.k8s.io/v1/endpointslices';
    this.slices = new RestartingInformer<V1EndpointSlice>(
      kc,
      slicesPath,
      () => listJson(kc, slicesPath),
      handlers,
      log,
    );
    this.synced = Promise.all([this.services.synced, this.slices.synced]).then(() => this.idle);
  }

  /** Prepares every node's namespace, then watches and writes the rules. */
  async start(): Promise<void> {
    for (const n of this.nodes) {
      if (!(await tryInNetns(n.netns, ['sysctl', '-qw', 'net.bridge.bridge-nf-call-iptables=1'])))
        this.log.warn(
          { node: n.name },
          'bridged traffic does not pass iptables (load br_netfilter): a Service reached from a pod on its endpoint’s own node may not answer',
        );
      // The chains first (no Service yet), so the jumps have somewhere to go.
      const empty = proxyRules({ services: [], slices: [], node: n.name, clusterCidr: this.clusterCidr });
      await inNetns(n.netns, ['iptables-restore', '-w', '--noflush'], restoreInput(empty, undefined));
      this.written.set(n.name, empty);
      for (const jump of PROXY_JUMPS) {
        const [t, table, chain, ...rule] = jump;
        if (!(await tryInNetns(n.netns, ['iptables', '-w', t!, table!, '-C', chain!, ...rule])))
          await inNetns(n.netns, ['iptables', '-w', t!, table!, '-I', chain!, ...rule]);
      }
    }
    this.services.start();
    this.slices.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.services.stop(), this.slices.stop()]);
    await this.idle;
  }

  private sync(): void {
    this.dirty = true;
    if (this.syncing) return;
    this.syncing = true;
    this.idle = (async () => {
      while (this.dirty) {
        this.dirty = false;
        for (const n of this.nodes) {
          const rules = proxyRules({
            services: this.services.list(),
            slices: this.slices.list(),
            node: n.name,
            clusterCidr: this.clusterCidr,
          });
          try {
            await inNetns(
              n.netns,
              ['iptables-restore', '-w', '--noflush'],
              restoreInput(rules, this.written.get(n.name)),
            );
            this.written.set(n.name, rules);
          } catch (e) {
            this.log.error({ node: n.name, error: describeError(e) }, 'cannot write the Service rules');
          }
        }
      }
      this.syncing = false;
    })();
  }
}
