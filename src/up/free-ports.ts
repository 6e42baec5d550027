/**
 * The fixed ports `amesh up` serves on the bridge address (the API server's, istiod's), checked before any is
 * needed: a port another program holds, on that address or on all of them, is named with how to find that program,
 * instead of a component's own advice for its own flags, which `up` does not have.
 */
import net from 'node:net';
import { MeshError } from '../lib/errors.js';

/** A port `up` listens on, and what for. */
export interface UpPort {
  readonly port: number;
  readonly what: string;
}

/** Whether `host:port` can be listened on now (the listener is closed at once). */
function free(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(false) : reject(e)));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Throws UP_ERR_PORT_IN_USE naming every port of `ports` on `host` that another program holds. */
export async function requireFreePorts(host: string, ports: readonly UpPort[]): Promise<void> {
  const taken: UpPort[] = [];
  for (const p of ports) if (!(await free(host, p.port))) taken.push(p);
  if (taken.length === 0) return;
  const first = String(taken[0]!.port);
  throw new MeshError(
    'UP_ERR_PORT_IN_USE',
    `another program listens on ${taken.map((p) => `${String(p.port)} (${p.what})`).join(', ')}, on ${host} or on all addresses, where amesh up serves them: ss -ltnp 'sport = :${first}' names it; stop it, or run amesh up in another network namespace (ip netns add NAME; ip netns exec NAME amesh up)`,
  );
}
