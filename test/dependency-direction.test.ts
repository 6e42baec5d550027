/**
 * The source tree's rooms (the folders under src/) depend one way: no module imports itself back through others,
 * and a room imports only rooms of a lower layer. The layers, bottom first, are the house's plan; a change that
 * needs an arrow upward moves the shared piece down instead.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importCycles, sourceImports } from './helpers/import-graph.js';

/** Bottom first: generated protobuf, shared helpers and the HTTP/2 layer import nothing above them. */
const LAYERS: readonly (readonly string[])[] = [
  ['api', 'lib', 'h2'],
  ['native', 'kube', 'zds'],
  ['apiserver', 'controllers', 'echo', 'extauthz', 'ztunnel', 'cni'],
  ['istiod', 'waypoint'],
  ['install'],
  ['up'],
  ['demo'],
  ['cli'],
];

const layerOf = (room: string): number => LAYERS.findIndex((l) => l.includes(room));
const roomOf = (file: string): string => file.split('/')[1] ?? '';

const graph = sourceImports('src');

test('no import cycle among the modules of src/ (static imports; `import type` is erased)', () => {
  assert.deepEqual(importCycles(graph), []);
});

test('every room of src/ has a layer, and imports only rooms of lower layers', () => {
  const upward: string[] = [];
  for (const [file, targets] of graph) {
    const from = roomOf(file);
    assert.notEqual(layerOf(from), -1, `src/${from}/ is in no layer: add it to LAYERS`);
    for (const target of targets) {
      const to = roomOf(target);
      if (to !== from && layerOf(to) >= layerOf(from)) upward.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(upward, []);
});

test('the cycle check finds a cycle through three modules and ignores a diamond', () => {
  const g = new Map([
    ['a', ['b', 'd']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['e']],
    ['e', []],
  ]);
  assert.deepEqual(importCycles(g), [['a', 'b', 'c']]);
  g.set('c', ['e']);
  assert.deepEqual(importCycles(g), []);
});
