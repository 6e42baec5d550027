import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

/** `false` when dnsmasq runs, else the reason to skip. */
export function dnsmasqSkip(): false | string {
  return spawnSync('dnsmasq', ['--version'], { stdio: 'ignore' }).status === 0
    ? false
    : 'dnsmasq is not installed (apt-get install dnsmasq-base; .ci/run does this)';
}

export interface DnsmasqZone {
  /** `ip name` lines, as in /etc/hosts; several lines for one name give it several records. */
  readonly hosts: readonly string[];
  /** `name,text` TXT records. */
  readonly txt?: readonly string[];
}

/**
 * dnsmasq as an independent nameserver on `ip:port`: authoritative-only for `zone` (no upstream of its own),
 * NXDOMAIN for other names under `example`, `cluster.local` and single labels. `prefix` runs it under another
 * command (`ip netns exec NS`). Resolves once it serves.
 */
export async function startDnsmasq(
  dir: string,
  ip: string,
  port: number,
  zone: DnsmasqZone,
  prefix: readonly string[] = [],
): Promise<ChildProcess> {
  const hosts = path.join(dir, `hosts-${ip}-${port}`);
  await writeFile(hosts, zone.hosts.join('\n') + '\n');
  const args = [
    'dnsmasq',
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--no-resolv',
    '--no-hosts',
    `--addn-hosts=${hosts}`,
    '--local=/example/',
    '--local=/cluster.local/',
    '--local=//',
    `--listen-address=${ip}`,
    '--bind-interfaces',
    `--port=${port}`,
    '--user=root',
    '--group=root',
    '--pid-file=',
    '--log-facility=-',
    ...(zone.txt ?? []).map((t) => `--txt-record=${t}`),
  ];
  const all = [...prefix, ...args];
  const p = spawn(all[0]!, all.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    p.stderr.on('data', (d: Buffer) => {
      log += d.toString();
      // The last line of its start-up, after the sockets are bound.
      if (log.includes(`read ${hosts}`)) resolve();
    });
    p.once('exit', (code) => reject(new Error(`dnsmasq exited (${String(code)}): ${log}`)));
  });
  return p;
}
