import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DATA_PATH_NODE_FLAGS, dataPathFlagsMissing } from './node-flags.js';

test('dataPathFlagsMissing: a ztunnel started without the heap floors says so and how to fix it', () => {
  assert.match(
    dataPathFlagsMissing([]) ?? '',
    /started without --min-semi-space-size=16 --initial-old-space-size=64: .*amesh. bin/,
  );
  assert.match(
    dataPathFlagsMissing(['--min-semi-space-size=16']) ?? '',
    /started without --initial-old-space-size=64: /,
  );
  assert.equal(dataPathFlagsMissing([...DATA_PATH_NODE_FLAGS]), undefined);
  assert.equal(
    dataPathFlagsMissing(['--min-semi-space-size=32', '--initial-old-space-size=128']),
    undefined,
    'values given on purpose are respected',
  );
});
