import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { isMeshError } from '../lib/errors.js';
import { requireFreePorts } from './free-ports.js';

test('a port up needs that another program holds is named with what it is for and how to find the program, never a flag up does not have', async () => {
  const holder = net.createServer().listen(0, '127.0.0.1');
  await once(holder, 'listening');
  const free = net.createServer().listen(0, '127.0.0.1');
  await once(free, 'listening');
  const freePort = (free.address() as AddressInfo).port;
  free.close();
  try {
    const held = (holder.address() as AddressInfo).port;
    await requireFreePorts('127.0.0.1', [{ port: freePort, what: 'free' }]);
    await assert.rejects(
      requireFreePorts('127.0.0.1', [
        { port: freePort, what: 'free' },
        { port: held, what: "istiod's monitoring" },
      ]),
      (e: unknown) =>
        isMeshError(e, 'UP_ERR_PORT_IN_USE') &&
        e.message.startsWith(`another program listens on ${String(held)} (istiod's monitoring), on 127.0.0.1`) &&
        e.message.includes(`ss -ltnp 'sport = :${String(held)}'`) &&
        !/--listen|--monitoring-address/.test(e.message),
    );
  } finally {
    holder.close();
  }
});
