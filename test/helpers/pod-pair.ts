import { PodRules } from '../../src/cni/agent/pod-rules.js';
import { TestNetns, mustRun } from './netns.js';

/** Two throwaway pod network namespaces on one link, as two pods on a node's network. */
export interface PodPair {
  readonly client: TestNetns;
  readonly server: TestNetns;
  /** Deletes both namespaces (their sockets must be closed first). */
  remove(): Promise<void>;
}

/**
 * A client and a server pod joined by a veth pair (`eth0` in each), each with its address on a /24 and a default
 * route on `eth0` (as a pod's: Service VIPs are on no link, only capture gives them a meaning). With `enroll`, both
 * get Istio's in-pod rules (`PodRules`), as the node agent applies them to an ambient pod.
 */
export async function podPair(clientIp: string, serverIp: string, enroll: boolean): Promise<PodPair> {
  const made: TestNetns[] = [];
  const remove = async (): Promise<void> => {
    for (const ns of made.splice(0)) await ns.remove();
  };
  try {
    const client = await TestNetns.create();
    made.push(client);
    const server = await TestNetns.create();
    made.push(server);
    await mustRun('ip', [
      '-n',
      client.name,
      'link',
      'add',
      'eth0',
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      server.name,
    ]);
    for (const [ns, ip] of [
      [client, clientIp],
      [server, serverIp],
    ] as const) {
      await mustRun('ip', ['-n', ns.name, 'addr', 'add', `${ip}/24`, 'dev', 'eth0']);
      await mustRun('ip', ['-n', ns.name, 'link', 'set', 'eth0', 'up']);
      await mustRun('ip', ['-n', ns.name, 'route', 'add', 'default', 'dev', 'eth0']);
      if (enroll) await new PodRules().apply(ns.path);
    }
    return { client, server, remove };
  } catch (e) {
    await remove();
    throw e;
  }
}
