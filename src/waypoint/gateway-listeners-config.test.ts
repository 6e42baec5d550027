import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create } from '@bufbuild/protobuf';
import { ListenerSchema } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import { gatewayListenersFromXds, listenerForSni, virtualHostFor } from './gateway-listeners-config.js';

const listener = (name: string, hostname: string, hosts: string[], protocol = 'HTTPS') =>
  create(ListenerSchema, {
    name,
    port: 443,
    protocol,
    hostname,
    credentialNames: [`kubernetes-gateway://ingress/${name}`],
    virtualHosts: hosts.map((h) => ({
      hostname: h,
      routes: [{ name: h, action: { case: 'directStatus' as const, value: 200 } }],
    })),
  });

const { listeners, rejected } = gatewayListenersFromXds([
  listener('any', '', ['*']),
  listener('wild', '*.example.com', ['*.example.com', 'a.example.com']),
  listener('deeper', '*.b.example.com', ['*.b.example.com']),
  listener('exact', 'a.example.com', ['a.example.com']),
  listener('udp', '', [], 'UDP'),
]);

test('a listener of a protocol the gateway does not serve is rejected by name', () => {
  assert.deepEqual(rejected, ['listener udp: protocol UDP is not served']);
});

test('SNI picks the listener whose hostname is the name, else the longest covering wildcard, else the one without a hostname', () => {
  assert.equal(listenerForSni(listeners, 'a.example.com')?.name, 'exact');
  assert.equal(listenerForSni(listeners, 'x.b.example.com')?.name, 'deeper');
  assert.equal(listenerForSni(listeners, 'c.example.com')?.name, 'wild');
  assert.equal(listenerForSni(listeners, 'example.com')?.name, 'any', 'a wildcard does not cover its own suffix');
  assert.equal(listenerForSni(listeners, undefined)?.name, 'any', 'no SNI: the listener without a hostname');
  assert.equal(listenerForSni(listeners.slice(1), 'other.test'), undefined);
});

test('Host picks the exact virtual host, else the longest covering wildcard, else *; the port and a trailing dot are ignored', () => {
  const wild = listeners.filter((l) => l.name === 'wild');
  assert.equal(virtualHostFor(wild, 'A.example.com:443')?.hostname, 'a.example.com');
  assert.equal(virtualHostFor(wild, 'z.example.com.')?.hostname, '*.example.com');
  assert.equal(virtualHostFor(wild, 'other.test'), undefined);
  assert.equal(virtualHostFor(listeners, 'other.test')?.hostname, '*');
});
