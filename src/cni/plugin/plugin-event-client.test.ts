import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMeshError } from '../../lib/errors.js';
import { cniPluginAddEvent } from './cni-plugin-add-event.js';
import { postCniAddEvent } from './plugin-event-client.js';

let dir: string;
before(async () => (dir = await mkdtemp(path.join(tmpdir(), 'amesh-cni-client-'))));
after(() => rm(dir, { recursive: true, force: true }));

const EVENT = cniPluginAddEvent('/var/run/netns/cni-1', 'web-0', 'shop', []);

/** An agent on a fresh unix socket that answers each request with `answer`; closed after `use`. */
async function withAgent(
  answer: (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void,
  use: (socket: string) => Promise<void>,
): Promise<void> {
  const socket = path.join(dir, `agent-${String(Math.random()).slice(2)}.sock`);
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => answer(req, body, res));
  });
  server.listen(socket);
  await once(server, 'listening');
  try {
    await use(socket);
  } finally {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  }
}

test("a 200 resolves; the request is Istio's: POST /cmdadd, JSON content type, the event as body", async () => {
  let seen: { method?: string; url?: string; type?: string; body?: string } = {};
  await withAgent(
    (req, body, res) => {
      seen = { method: req.method, url: req.url, type: req.headers['content-type'], body };
      res.end();
    },
    (socket) => postCniAddEvent(socket, EVENT),
  );
  assert.deepEqual(seen, { method: 'POST', url: '/cmdadd', type: 'application/json', body: JSON.stringify(EVENT) });
});

test("any other status is a failed capture quoting the agent's answer", async () => {
  await withAgent(
    (_req, _body, res) => res.writeHead(500).end('failed to add pod to mesh: no ztunnel connection\n'),
    (socket) =>
      assert.rejects(
        postCniAddEvent(socket, EVENT),
        (e) =>
          isMeshError(e, 'CNI_ERR_CAPTURE_FAILED') &&
          e.message.endsWith('did not capture pod shop/web-0: 500 failed to add pod to mesh: no ztunnel connection'),
      ),
  );
  await withAgent(
    (_req, _body, res) => res.writeHead(204).end(),
    (socket) =>
      assert.rejects(
        postCniAddEvent(socket, EVENT),
        (e) => isMeshError(e, 'CNI_ERR_CAPTURE_FAILED') && e.message.endsWith(': 204 (no message)'),
      ),
  );
});

test('no socket, or an agent that does not answer in time, is an unavailable agent', async () => {
  await assert.rejects(
    postCniAddEvent(path.join(dir, 'missing.sock'), EVENT),
    (e) =>
      isMeshError(e, 'CNI_ERR_AGENT_UNAVAILABLE') &&
      /the socket does not exist \(is amesh cni-agent running on this node\?\)$/.test(e.message),
  );
  await withAgent(
    () => undefined,
    (socket) =>
      assert.rejects(
        postCniAddEvent(socket, EVENT, 50),
        (e) => isMeshError(e, 'CNI_ERR_AGENT_UNAVAILABLE') && e.message.includes('no answer within 50 ms'),
      ),
  );
});
