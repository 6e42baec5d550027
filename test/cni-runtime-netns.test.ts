/**
 * The runtime side of CNI against Debian's reference plugins (`bridge` with `host-local` IPAM), as `amesh up`'s
 * kubelet role runs them: the chain runs inside a node's network namespace and wires a pod's. Everything lives
 * in throwaway namespaces and a temporary directory, removed afterwards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CniRuntime, parseNetworkConfigList } from '../src/up/cni-runtime.js';
import { netnsSkip, TestNetns } from './helpers/netns.js';

const PLUGIN_DIR = '/usr/lib/cni';
const skip =
  netnsSkip() ||
  (!existsSync(path.join(PLUGIN_DIR, 'bridge')) &&
    `no ${PLUGIN_DIR}/bridge: apt-get install containernetworking-plugins (.ci/run does)`);

const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8' });

test(
  'a bridge + host-local chain run in a node netns gives the pod netns eth0 on the node bridge; CHECK passes; DEL releases it',
  { skip },
  async () => {
    const id = randomBytes(3).toString('hex');
    const dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-netns-'));
    const made: TestNetns[] = [];
    try {
      const nodeNs = await TestNetns.create();
      made.push(nodeNs);
      const podNs = await TestNetns.create();
      made.push(podNs);
      const [node, pod] = [nodeNs.name, podNs.name];
      const list = parseNetworkConfigList(
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'amesh-test',
          plugins: [
            {
              type: 'bridge',
              bridge: `ambr${id}`,
              isGateway: true,
              ipMasq: false,
              ipam: { type: 'host-local', ranges: [[{ subnet: '10.244.7.0/24' }]], dataDir: path.join(dir, 'ipam') },
            },
          ],
        }),
        'test',
      );
      const rt = new CniRuntime({ pluginDirs: [PLUGIN_DIR], cacheDir: path.join(dir, 'cache'), inNetns: nodeNs.path });
      const at = {
        containerId: `c${id}`,
        netns: podNs.path,
        ifName: 'eth0',
        args: { K8S_POD_NAMESPACE: 'shop', K8S_POD_NAME: 'web-0' },
      };
      const result = (await rt.add(list, at)) as { ips?: { address: string; gateway?: string }[] };
      const address = result.ips?.[0]?.address ?? '';
      assert.match(address, /^10\.244\.7\.\d+\/24$/);
      assert.match(ip('-n', pod, '-4', '-o', 'addr', 'show', 'eth0'), new RegExp(address.replace(/\./g, '\\.')));
      assert.match(
        ip('-n', node, 'link', 'show', `ambr${id}`),
        /state UP|UNKNOWN|DOWN/,
        'the bridge is in the node netns',
      );
      assert.throws(() => ip('link', 'show', `ambr${id}`), 'and not in the host netns');
      // The node reaches a TCP server in the pod over its bridge.
      const server = spawn(
        'ip',
        [
          'netns',
          'exec',
          pod,
          process.execPath,
          '-e',
          "require('net').createServer((s) => s.end('pod')).listen(8080, () => console.log('listening'))",
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      try {
        await new Promise<void>((resolve, reject) => {
          server.stdout.on('data', (d: Buffer) => (String(d).includes('listening') ? resolve() : undefined));
          server.once('exit', (code) => reject(new Error(`the pod's server exited with ${String(code)}`)));
        });
        const client = spawnSync(
          'ip',
          [
            'netns',
            'exec',
            node,
            process.execPath,
            '-e',
            `require('net').connect(8080, '${address.split('/')[0] ?? ''}').on('data', (d) => process.stdout.write(d)).on('error', (e) => { console.error(e.message); process.exit(1); })`,
          ],
          { encoding: 'utf8', timeout: 5000 },
        );
        assert.equal(client.stdout, 'pod', client.stderr);
      } finally {
        server.kill();
      }
      await rt.check(list, at);
      await rt.del(list, at);
      assert.throws(() => ip('-n', pod, 'link', 'show', 'eth0'), 'DEL removed the pod end of the veth');
      await rt.del(list, at);
    } finally {
      for (const ns of made.reverse()) await ns.remove();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
