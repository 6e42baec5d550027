import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readJournal, ResourceJournal } from './resource-journal.js';

test("a link or namespace whose creation failed (File exists: it may be another cluster's) leaves the record, so no teardown removes it", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-journal-'));
  try {
    const file = path.join(dir, 'created.jsonl');
    const journal = await ResourceJournal.open(file);
    await assert.rejects(
      journal.create({ t: 'link', name: 'amesh-br' }, () => Promise.reject(new Error('File exists'))),
      /File exists/,
    );
    await journal.create({ t: 'netns', name: 'made' }, () => Promise.resolve());
    assert.deepEqual(
      (await readJournal(file)).filter((e) => e.t !== 'up'),
      [{ t: 'netns', name: 'made' }],
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
