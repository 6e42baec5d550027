import net from 'node:net';
import { closeSync } from 'node:fs';
import { once } from 'node:events';
import { listenInNetns, tcpSocketInNetns } from '../../src/native/native.js';
import type { InpodProxyRunner } from '../../src/ztunnel/inpod/inpod-proxy-runner.js';
import type { WorkloadInfo } from '../../src/zds/workload-info.js';

/**
 * A small real InpodProxyRunner: one TCP listener per pod inside the pod's network namespace that answers every
 * connection with the pod's uid, so a test sees from outside (`probe`) which proxy runs in which namespace.
 * It keeps the contract's fd ownership: a started pod's netns fd is held and closed at stop.
 */
export class ListenerRunner implements InpodProxyRunner {
  readonly starts: string[] = [];
  private readonly pods = new Map<string, { server: net.Server; netns: number }>();

  constructor(
    readonly host: string,
    readonly port: number,
  ) {}

  async start(uid: string, _info: WorkloadInfo, netns: number): Promise<void> {
    const server = net.createServer((socket) => socket.end(uid));
    await listenInNetns(server, netns, { host: this.host, port: this.port });
    this.pods.set(uid, { server, netns });
    this.starts.push(uid);
  }

  stop(uid: string): void {
    const pod = this.pods.get(uid);
    if (pod === undefined) return;
    this.pods.delete(uid);
    pod.server.close();
    closeSync(pod.netns);
  }

  /** What answers on host:port inside `netnsPath`: a pod's uid, or the connect error's code (ECONNREFUSED). */
  async probe(netnsPath: string): Promise<string> {
    const socket = tcpSocketInNetns(netnsPath, 4);
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.connect(this.port, this.host);
    try {
      await once(socket, 'end');
      return text;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code ?? 'error';
    } finally {
      socket.destroy();
    }
  }
}
