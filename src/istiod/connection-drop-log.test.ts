import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { LogControl } from '../lib/log.js';
import { ConnectionDropLog } from './connection-drop-log.js';

test('refused connections: the first is logged at once, the rest of the interval in one line that names at most 16 peers and counts the others', async () => {
  const out = new PassThrough();
  const lines: Record<string, unknown>[] = [];
  out.on('data', (d: Buffer) =>
    lines.push(
      ...d
        .toString()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    ),
  );
  const log = new LogControl({ format: 'json', level: 'info', component: 'istiod', out }).scope('grpc');
  const drops = new ConnectionDropLog(log, { maxConnectionsPerSource: 2 }, 50);
  // The interval's timer is unref'd (it must not keep istiod alive); hold the loop open while testing.
  const hold = setInterval(() => undefined, 1000);
  try {
    drops.record('10.0.0.1', 'per source');
    for (let i = 0; i < 40; i++) drops.record(`10.0.1.${i % 20}`, 'per source');
    while (lines.length < 2) await once(out, 'data');
    assert.equal(lines.length, 2);
    assert.deepEqual([lines[0]?.['dropped'], lines[0]?.['peers']], [1, { '10.0.0.1': 1 }]);
    const summary = lines[1]!;
    assert.equal(summary['dropped'], 40);
    assert.equal(Object.keys(summary['peers'] as object).length, 16);
    assert.equal(summary['otherPeers'], 8);
    assert.deepEqual(summary['reasons'], { 'per source': 40 });
    assert.equal(summary['maxConnectionsPerSource'], 2);
  } finally {
    drops.stop();
    clearInterval(hold);
  }
});
