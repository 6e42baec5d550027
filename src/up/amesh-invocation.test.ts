import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ameshInvocation } from './amesh-invocation.js';

test('suggested commands start amesh as this shell can: amesh on PATH, else npm run in the checkout, naming it from elsewhere', async () => {
  const bin = await mkdtemp(path.join(tmpdir(), 'amesh-bin-'));
  try {
    await writeFile(path.join(bin, 'amesh'), '#!/bin/sh\n');
    await chmod(path.join(bin, 'amesh'), 0o755);
    assert.equal(ameshInvocation(`/usr/bin:${bin}`, '/tmp', '/src/amesh'), 'amesh');
    assert.equal(ameshInvocation('/usr/bin', '/src/amesh', '/src/amesh'), 'npm run -s amesh --');
    assert.equal(ameshInvocation('/usr/bin', '/tmp', '/src/amesh'), 'npm --prefix /src/amesh run -s amesh --');
  } finally {
    await rm(bin, { recursive: true, force: true });
  }
});
