import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { APP_SERVER_OPTIONS, APP_SOCKET_HIGH_WATER_MARK, LocalSocketFactory } from './socket-factory.js';

/** The largest DATA frame Node's HTTP/2 sends, whatever SETTINGS_MAX_FRAME_SIZE allows (nghttp2's default). */
const NODE_DATA_FRAME = 16 * 1024;
const HOST = '127.0.101.1';

test('app-facing sockets, accepted and connected, buffer several HTTP/2 DATA frames, so a loop turn of HBONE frames leaves in one writev', async () => {
  assert.ok(APP_SOCKET_HIGH_WATER_MARK >= 4 * NODE_DATA_FRAME);
  const server = net.createServer(APP_SERVER_OPTIONS);
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  await new Promise<void>((r) => server.listen(0, HOST, r));
  const { port } = server.address() as net.AddressInfo;
  const connected = await new LocalSocketFactory().connect(HOST, port, undefined);
  const [inbound] = await accepted;
  try {
    assert.equal(connected.writableHighWaterMark, APP_SOCKET_HIGH_WATER_MARK, 'a socket ztunnel connects to an app');
    assert.equal(inbound.writableHighWaterMark, APP_SOCKET_HIGH_WATER_MARK, 'a socket ztunnel accepts from an app');
    assert.equal(connected.allowHalfOpen, true);
    assert.equal(inbound.allowHalfOpen, true);
  } finally {
    connected.destroy();
    inbound.destroy();
    server.close();
  }
});
