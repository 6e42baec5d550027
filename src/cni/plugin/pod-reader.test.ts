import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMeshError } from '../../lib/errors.js';
import { readPodFacts } from './pod-reader.js';

let dir: string;
before(async () => (dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-pod-reader-'))));
after(() => rm(dir, { recursive: true, force: true }));

const kubeconfig = (server: string): string => `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`;

test('a missing kubeconfig is a Kubernetes API error naming the file the node agent writes', async () => {
  const file = path.join(dir, 'istio-cni-kubeconfig');
  await assert.rejects(
    readPodFacts(file, 'shop', 'web-0'),
    (e) =>
      isMeshError(e, 'CNI_ERR_KUBE_API') &&
      e.message.startsWith(`cannot load the plugin's kubeconfig ${file} (the node agent writes it)`),
  );
});

test('an API that accepts the connection but never answers fails the lookup after the timeout', async () => {
  const sockets: net.Socket[] = [];
  const hung = net.createServer((s) => sockets.push(s)).listen(0, '127.0.0.1');
  await once(hung, 'listening');
  const file = path.join(dir, 'hung-kubeconfig');
  await writeFile(file, kubeconfig(`http://127.0.0.1:${String((hung.address() as net.AddressInfo).port)}`));
  try {
    await assert.rejects(
      readPodFacts(file, 'shop', 'web-0', 100),
      (e) =>
        isMeshError(e, 'CNI_ERR_KUBE_API') &&
        /^cannot read (pod shop\/web-0|namespace shop) from the Kubernetes API at http:\/\/127\.0\.0\.1:\d+: .*abort/i.test(
          e.message,
        ),
    );
  } finally {
    for (const s of sockets) s.destroy();
    hung.close();
  }
});
