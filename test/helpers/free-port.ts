import net from 'node:net';
import { once } from 'node:events';

/**
 * `n` distinct ports the kernel reports free on `ip` right now, for a child process that must be told its ports
 * before it starts. Tests use these instead of Istio's fixed control ports (15000, 15012, 15014, 15020, 15021), so
 * the suite never collides with a real ztunnel or istiod running on the machine.
 */
export async function freePorts(ip: string, n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => net.createServer().listen(0, ip));
  await Promise.all(servers.map((s) => once(s, 'listening')));
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** Free admin, metrics and readiness ports for a ztunnel process on `ip`. */
export async function freeControlPorts(ip: string): Promise<{ admin: number; metrics: number; readiness: number }> {
  const [admin = 0, metrics = 0, readiness = 0] = await freePorts(ip, 3);
  return { admin, metrics, readiness };
}
