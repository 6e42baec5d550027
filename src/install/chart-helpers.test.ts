import { test } from 'node:test';
import assert from 'node:assert/strict';
import { goString, imageReference, resourcesBlock, truthy } from './chart-helpers.js';

test('an image value with a / or a : is a whole reference; a bare name goes between the hub and the tag', () => {
  assert.equal(imageReference('amesh', 'localhost', '0.1.0'), 'localhost/amesh:0.1.0');
  assert.equal(imageReference('amesh', 'registry.example/mesh', '1.3'), 'registry.example/mesh/amesh:1.3');
  assert.equal(imageReference('registry.example/amesh:dev', 'localhost', '0.1.0'), 'registry.example/amesh:dev');
  assert.equal(imageReference('amesh:dev', 'localhost', '0.1.0'), 'amesh:dev');
});

test('values print as Go templates print them, and are true as Go templates test them', () => {
  assert.equal(goString(1.0), '1');
  assert.equal(goString(0.5), '0.5');
  assert.equal(goString(true), 'true');
  assert.equal(goString('x'), 'x');
  for (const f of [false, 0, '', null, undefined, [], {}]) assert.equal(truthy(f), false, JSON.stringify(f));
  for (const t of [true, 1, 'x', [0], { a: 1 }]) assert.equal(truthy(t), true, JSON.stringify(t));
});

test('the resources block keeps limits then requests, each without empty entries, and drops what is left empty', () => {
  assert.deepEqual(resourcesBlock({ requests: { cpu: '100m', memory: '' }, limits: { cpu: null } }), {
    requests: { cpu: '100m' },
  });
  assert.deepEqual(resourcesBlock(undefined), {});
});
