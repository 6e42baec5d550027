import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HeaderField } from '../header-block.js';
import { HpackDecoder } from './hpack-decoder.js';
import { DEFAULT_HEADER_TABLE_SIZE, HpackEncoder } from './hpack-encoder.js';

const hex = (b: Buffer): string => b.toString('hex');

test('static matches are indexed, static names are indexed names, the rest literal, all without indexing', () => {
  const e = new HpackEncoder();
  // RFC 7541 C.4.1's request, but ':authority' as a literal without indexing (0x01) instead of with (0x41).
  assert.equal(
    hex(
      e.encode([
        [':method', 'GET'],
        [':scheme', 'http'],
        [':path', '/'],
        [':authority', 'www.example.com'],
      ]),
    ),
    '828684018cf1e3c2e5f23a6ba0ab90f4ff',
  );
  assert.equal(
    hex(e.encode([['custom-key', 'custom-value']])),
    '008825a849e95ba97d7f8925a849e95bb8e8b4bf',
    'C.4.3 custom-key, literal name',
  );
  assert.equal(hex(e.encode([[':status', '200']])), '88');
  assert.equal(hex(e.encode([])), '');
});

test('an HBONE CONNECT request and its response round-trip through our decoder', () => {
  const e = new HpackEncoder();
  const d = new HpackDecoder({ maxTableSize: 4096, maxHeaderListSize: 16_384 });
  const request: HeaderField[] = [
    [':method', 'CONNECT'],
    [':authority', '10.244.1.7:8080'],
    ['baggage', 'k8s.cluster.name=cluster1,k8s.namespace.name=default'],
    ['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
    ['forwarded', 'for=10.244.2.9'],
  ];
  assert.deepEqual(d.decode(e.encode(request)), request);
  assert.deepEqual(d.decode(e.encode([[':status', '200']])), [[':status', '200']]);
});

test('blocks do not depend on each other: the same fields encode to the same bytes every time', () => {
  const e = new HpackEncoder();
  const fields: HeaderField[] = [
    [':authority', '10.0.0.1:80'],
    ['x-custom', 'v'],
  ];
  assert.equal(hex(e.encode(fields)), hex(e.encode(fields)));
});

test('fields larger than the initial output buffer', () => {
  const e = new HpackEncoder();
  const d = new HpackDecoder({ maxTableSize: 4096, maxHeaderListSize: 1 << 20 });
  const fields: HeaderField[] = Array.from({ length: 20 }, (_, i) => [`x-${i}`, '{'.repeat(1000 + i)]);
  assert.deepEqual(d.decode(e.encode(fields)), fields);
});

test('a peer lowering SETTINGS_HEADER_TABLE_SIZE gets a size update at the start of the next block only (§4.2)', () => {
  const e = new HpackEncoder();
  e.setPeerMaxTableSize(DEFAULT_HEADER_TABLE_SIZE);
  assert.equal(hex(e.encode([[':method', 'GET']])), '82', 'the default size needs no update');
  e.setPeerMaxTableSize(1000);
  e.setPeerMaxTableSize(100);
  assert.equal(
    hex(e.encode([[':method', 'GET']])),
    '3f4582',
    'one update to the latest (and smallest) size, 100 = 31 + 69',
  );
  assert.equal(hex(e.encode([[':method', 'GET']])), '82', 'only once');
  e.setPeerMaxTableSize(8192);
  assert.equal(hex(e.encode([[':method', 'GET']])), '82', 'raising it needs nothing: the table stays at 100');
  e.setPeerMaxTableSize(0);
  assert.equal(hex(e.encode([])), '20', 'an update goes out even in an empty block');
});

test('a size update our encoder sends is accepted by a decoder advertising that size', () => {
  const e = new HpackEncoder();
  e.setPeerMaxTableSize(0);
  const d = new HpackDecoder({ maxTableSize: 0, maxHeaderListSize: 1024 });
  assert.deepEqual(d.decode(e.encode([[':method', 'CONNECT']])), [[':method', 'CONNECT']]);
});
