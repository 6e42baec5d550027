import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CapturedLogs } from '../../../test/helpers/captured-logs.js';
import { networkConfigFiles } from './network-config-file.js';

test('the primary config is the first by name the runtime can load; others are skipped with a warning', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-net-d-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const logs = new CapturedLogs('install', 'warn');
  await writeFile(path.join(dir, '00-broken.conflist'), '{"name": "x", "plugins": [');
  await writeFile(path.join(dir, '01-list-in-a-conf.conf'), '{"name":"x","plugins":[{"type":"bridge"}]}');
  await writeFile(path.join(dir, '02-readme.json'), '{"type":"bridge"}');
  await writeFile(path.join(dir, '20-ptp.conflist'), '{"name":"kindnet","plugins":[{"type":"ptp"}]}');
  await writeFile(path.join(dir, '10-bridge.conf'), '{"name":"dbnet","type":"bridge"}');
  await writeFile(path.join(dir, '10-bridge.conflist.tmp.123'), '{}');
  await mkdir(path.join(dir, '05-dir.conflist'));
  assert.deepEqual(await networkConfigFiles(dir, logs.control.scope('install')), ['10-bridge.conf', '20-ptp.conflist']);
  assert.deepEqual(
    logs.lines.map((l) => path.basename(String(l['file']))),
    ['00-broken.conflist', '01-list-in-a-conf.conf'],
  );
  assert.deepEqual(await networkConfigFiles(path.join(dir, 'missing'), logs.control.scope('install')), []);
});
