import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { isMeshError } from '../../lib/errors.js';
import { atomicWriterUpdate, eventAfter, WATCH_DEADLINE_MS } from '../../../test/helpers/fs-events.js';
import { LocalConfigWatcher } from './local-config-watcher.js';
import type { LocalConfig } from './local-config.js';

const TEST_TIMEOUT_MS = 4 * WATCH_DEADLINE_MS;
const config = (name: string): string =>
  `workloads:\n- {uid: u, name: ${name}, namespace: a, workloadIps: [127.72.1.1]}\n`;

async function withWatcher(
  fn: (w: LocalConfigWatcher, file: string, dir: string, applied: LocalConfig[]) => Promise<void>,
  layout?: (dir: string) => Promise<string>,
): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-local-config-'));
  const file = layout === undefined ? path.join(dir, 'mesh.yaml') : await layout(dir);
  if (layout === undefined) await writeFile(file, config('v1'));
  const applied: LocalConfig[] = [];
  const w = new LocalConfigWatcher(file, (c) => applied.push(c), pino({ level: 'silent' }));
  try {
    await w.start();
    await fn(w, file, dir, applied);
  } finally {
    w.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const nameOf = (c: LocalConfig | undefined): string | undefined => c?.workloads[0]?.workload.name;

test(
  'an invalid local config edit is rejected with file:line (the watcher must fire) and the last good config stays',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    await withWatcher(async (w, file, _dir, applied) => {
      const [e] = await eventAfter<[unknown]>(w, 'rejected', () => writeFile(file, `${config('v2')}  bogus: [\n`));
      assert.ok(isMeshError(e, 'ZT_ERR_LOCAL_CONFIG_INVALID'), String(e));
      assert.match(e.message, new RegExp(`^${file.replace(/[.]/g, '\\.')}:\\d+: invalid YAML`));
      assert.deepEqual(applied.map(nameOf), ['v1']);
      await eventAfter(w, 'applied', () => writeFile(file, config('v3')));
      assert.deepEqual(applied.map(nameOf), ['v1', 'v3']);
    });
  },
);

test('an editor replacing the file by rename is seen', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withWatcher(async (w, file, dir, applied) => {
    await writeFile(path.join(dir, '.mesh.yaml.swp'), config('v2'));
    await eventAfter(w, 'applied', () => rename(path.join(dir, '.mesh.yaml.swp'), file));
    assert.deepEqual(applied.map(nameOf), ['v1', 'v2']);
  });
});

test(
  "a ConfigMap mount's ..data symlink swap is seen, though the file's own name never changes",
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    await withWatcher(
      async (w, _file, dir, applied) => {
        await eventAfter(w, 'applied', () => atomicWriterUpdate(dir, { 'mesh.yaml': config('v2') }));
        assert.deepEqual(applied.map(nameOf), ['v1', 'v2']);
      },
      async (dir) => {
        await atomicWriterUpdate(dir, { 'mesh.yaml': config('v1') });
        return path.join(dir, 'mesh.yaml');
      },
    );
  },
);
