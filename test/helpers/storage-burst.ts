/**
 * Child process for test/apiserver-storage-crash.test.ts: opens the store in the directory given as its
 * argument and creates pods from 20 concurrent writers until it is killed, printing `<resourceVersion> <key>`
 * for each write as soon as its promise resolves (that is, once the write is acknowledged as durable).
 */
import { Storage } from '../../src/apiserver/storage.js';

const WRITERS = 20;

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: storage-burst.ts DATA_DIR');
const store = await Storage.open(dir);
let next = 0;
await Promise.all(
  Array.from({ length: WRITERS }, async () => {
    for (;;) {
      const name = `p${next++}`;
      const key = `/registry/core/pods/default/${name}`;
      const created = await store.create(key, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'default' },
        spec: { nodeName: 'node-1' },
      });
      process.stdout.write(`${created.metadata.resourceVersion ?? ''} ${key}\n`);
    }
  }),
);
