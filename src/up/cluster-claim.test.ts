import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMeshError } from '../lib/errors.js';
import { ClusterClaim, releaseEndedClaims } from './cluster-claim.js';
import { loadUpConfig } from './up-config.js';

async function inTempDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-claim-'));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const cfg = (dir: string, name: string): ReturnType<typeof loadUpConfig> =>
  loadUpConfig({ name, dataDir: path.join(dir, `data-${name}`) }, {});

test('a second up in the same network namespace is refused (UP_ERR_RUNNING) naming the running one, whatever its name; released, it is free', async () => {
  await inTempDir(async (dir) => {
    const claims = path.join(dir, 'claims');
    const first = await ClusterClaim.take(cfg(dir, 'amesh'), claims);
    for (const name of ['amesh', 'other'])
      await assert.rejects(
        ClusterClaim.take(cfg(dir, name), claims),
        (e: unknown) =>
          isMeshError(e, 'UP_ERR_RUNNING') &&
          e.message.includes(`pid ${String(process.pid)}`) &&
          e.message.includes(`--data-dir ${path.join(dir, 'data-amesh')}`),
      );
    await first.release();
    await (await ClusterClaim.take(cfg(dir, 'other'), claims)).release();
    assert.deepEqual(await readdir(claims), []);
  });
});

test("an ended up's claim is taken over, unless it left things behind (UP_ERR_LEFTOVERS, naming its data dir); amesh down releases it", async () => {
  await inTempDir(async (dir) => {
    const claims = path.join(dir, 'claims');
    const first = await ClusterClaim.take(cfg(dir, 'amesh'), claims);
    const ended = path.join(dir, 'data-ended');
    for (const f of await readdir(claims))
      await writeFile(
        path.join(claims, f),
        JSON.stringify({ pid: process.pid, start: 'another process', dataDir: ended, name: 'amesh', hostNetns: '' }),
      );
    await (await ClusterClaim.take(cfg(dir, 'amesh'), claims)).release();

    const crashed = await ClusterClaim.take(cfg(dir, 'amesh'), claims);
    for (const f of await readdir(claims))
      await writeFile(
        path.join(claims, f),
        JSON.stringify({ pid: process.pid, start: 'another process', dataDir: dir, name: 'amesh', hostNetns: '' }),
      );
    await writeFile(path.join(dir, 'created.jsonl'), JSON.stringify({ t: 'netns', name: 'amesh-node1' }) + '\n');
    await assert.rejects(
      ClusterClaim.take(cfg(dir, 'amesh'), claims),
      (e: unknown) => isMeshError(e, 'UP_ERR_LEFTOVERS') && e.message.includes(`amesh down --data-dir ${dir}`),
    );
    await releaseEndedClaims(dir, claims);
    assert.deepEqual(await readdir(claims), []);
    await first.release();
    await crashed.release();
  });
});
