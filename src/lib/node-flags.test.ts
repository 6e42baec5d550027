import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DATA_PATH_NODE_FLAGS, dataPathFlagsMissing } from './node-flags.js';

test('dataPathFlagsMissing: a ztunnel started without the young-generation floor says so and how to fix it', () => {
  assert.match(dataPathFlagsMissing([]) ?? '', /started without --min-semi-space-size=16: .*amesh. bin/);
  assert.equal(dataPathFlagsMissing([...DATA_PATH_NODE_FLAGS]), undefined);
  assert.equal(dataPathFlagsMissing(['--min-semi-space-size=32']), undefined, 'the value given on purpose is respected');
});
