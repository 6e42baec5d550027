import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writePayload, type PayloadFile } from './atomic-writer.js';

const files = (o: Record<string, string>): Map<string, PayloadFile> =>
  new Map(Object.entries(o).map(([k, v]) => [k, { data: Buffer.from(v), mode: 0o644 }]));

test("kubelet's layout: ..data points at a timestamped payload, each name links through it; an update swaps ..data and drops what went", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'atomic-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  assert.equal(await writePayload(dir, files({ a: '1', 'sub/b': '2' }), new Date('2026-12-02T10:00:00Z')), true);
  const first = await readlink(path.join(dir, '..data'));
  assert.match(first, /^\.\.2026_12_02_10_00_00\.\d{9}$/);
  assert.equal(await readlink(path.join(dir, 'a')), '..data/a');
  assert.equal(await readlink(path.join(dir, 'sub')), '..data/sub');
  assert.equal(await readFile(path.join(dir, 'sub', 'b'), 'utf8'), '2');

  assert.equal(await writePayload(dir, files({ a: '1', 'sub/b': '2' })), false, 'the same payload is not rewritten');
  assert.equal(await writePayload(dir, files({ a: '3' }), new Date('2026-12-02T10:01:00Z')), true);
  assert.equal(await readFile(path.join(dir, 'a'), 'utf8'), '3');
  const current = await readlink(path.join(dir, '..data'));
  assert.match(current, /^\.\.2026_12_02_10_01_00\./);
  assert.deepEqual((await readdir(dir)).sort(), [current, '..data', 'a'], 'the old payload and sub/ are gone');
});
