import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
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

/** The same kubeconfig as JSON, the way the node agent writes it (client-node's exportConfig). */
const jsonKubeconfig = (server: string): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });

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

test('the pod and its namespace are read with the kubeconfig token over one connection; an object the API does not have is its Status', async () => {
  const seen: string[] = [];
  const api = http.createServer((req, res) => {
    seen.push(`${req.url ?? ''} ${req.headers.authorization ?? ''}`);
    const body = (status: number, o: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(o));
    };
    if (req.url === '/api/v1/namespaces/shop/pods/web-0')
      body(200, {
        metadata: { labels: { app: 'web', n: 1 }, annotations: { a: 'b' } },
        spec: { hostNetwork: false },
      });
    else if (req.url === '/api/v1/namespaces/shop')
      body(200, { metadata: { labels: { 'istio.io/dataplane-mode': 'ambient' } } });
    else body(404, { kind: 'Status', reason: 'NotFound', message: 'pods "gone" not found', code: 404 });
  });
  let connections = 0;
  api.on('connection', () => {
    connections++;
  });
  api.listen(0, '127.0.0.1');
  await once(api, 'listening');
  const file = path.join(dir, 'api-kubeconfig');
  await writeFile(file, jsonKubeconfig(`http://127.0.0.1:${String((api.address() as net.AddressInfo).port)}`));
  try {
    assert.deepEqual(await readPodFacts(file, 'shop', 'web-0'), {
      labels: { app: 'web' },
      annotations: { a: 'b' },
      hostNetwork: false,
      namespaceLabels: { 'istio.io/dataplane-mode': 'ambient' },
    });
    assert.deepEqual(seen.sort(), ['/api/v1/namespaces/shop Bearer t', '/api/v1/namespaces/shop/pods/web-0 Bearer t']);
    assert.equal(connections, 1);
    await assert.rejects(
      readPodFacts(file, 'shop', 'gone'),
      (e) =>
        isMeshError(e, 'CNI_ERR_KUBE_API') && /pod shop\/gone .*: 404 NotFound: pods "gone" not found$/.test(e.message),
    );
  } finally {
    api.close();
  }
});

test('a kubeconfig whose user authenticates otherwise than with a token or a certificate is refused by name', async () => {
  const file = path.join(dir, 'exec-kubeconfig');
  await writeFile(
    file,
    kubeconfig('https://127.0.0.1:1').replace(
      '{token: t}',
      '{exec: {command: get-token, apiVersion: client.authentication.k8s.io/v1}}',
    ),
  );
  await assert.rejects(
    readPodFacts(file, 'shop', 'web-0'),
    (e) =>
      isMeshError(e, 'CNI_ERR_KUBE_API') &&
      e.message.endsWith('its user authenticates with exec; the plugin takes a token or a certificate'),
  );
});
