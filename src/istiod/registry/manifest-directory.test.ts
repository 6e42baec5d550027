import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { ManifestDirectory } from './manifest-directory.js';
import { objectKey, type Manifest, type ObjectChanges } from './manifest-dir.js';
import { atomicWriterUpdate, eventAfter, WATCH_DEADLINE_MS } from '../../../test/helpers/fs-events.js';

/** Every test waits on the directory's `change` event or a log line; a watcher that never fires fails the test. */
const TEST_TIMEOUT_MS = 4 * WATCH_DEADLINE_MS;

const pod = (name: string, ip: string, extra = ''): string =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: shop, labels: {app: web}}\nspec: {nodeName: n1}\nstatus: {phase: Running, podIP: ${ip}}${extra}\n`;
const SERVICE =
  'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {clusterIP: 10.96.0.1, selector: {app: web}, ports: [{port: 80}]}\n';

async function withDirectory(
  fn: (r: ManifestDirectory, dir: string, logs: string[]) => Promise<void>,
  layout: (dir: string) => Promise<string> = (d) => Promise.resolve(d),
): Promise<void> {
  const root = await mkdtemp(path.join(tmpdir(), 'amesh-manifest-dir-'));
  const logs: string[] = [];
  const log = pino(
    { level: 'trace' },
    new Writable({
      write: (c: Buffer, _e, cb) => {
        logs.push(String(c));
        logLines.emit('line', String(c));
        cb();
      },
    }),
  );
  const dir = await layout(root);
  const r = new ManifestDirectory(dir, log);
  try {
    await r.reload();
    r.watch();
    await fn(r, dir, logs);
  } finally {
    r.stop();
    await rm(root, { recursive: true, force: true });
  }
}

const logLines = new EventEmitter<{ line: [string] }>();

/** Resolves on the first log line containing `text` after the call (deadline as in `change`). */
async function logged(text: string, act: () => Promise<void>): Promise<void> {
  const seen = new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`never logged: ${text}`)), WATCH_DEADLINE_MS);
    const on = (l: string): void => {
      if (!l.includes(text)) return;
      clearTimeout(deadline);
      logLines.off('line', on);
      resolve();
    };
    logLines.on('line', on);
  });
  await act();
  await seen;
}

const keys = (r: ManifestDirectory): string[] => r.all().map(objectKey).sort();
/** A pod manifest's `status.podIP`. */
const podIp = (o: Manifest | undefined): unknown => {
  const status: Readonly<Record<string, unknown>> | undefined = o?.status;
  return status?.['podIP'];
};

/** Writes, then waits for the reload that the watcher must trigger. */
async function change(r: ManifestDirectory, write: () => Promise<void>): Promise<void> {
  await eventAfter(r, 'change', write);
}

/** Writes, then waits for the first reload that changes `key` (a reload in between may change nothing). */
async function changeOf(r: ManifestDirectory, key: string, write: () => Promise<void>): Promise<void> {
  const seen = new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(
      () => reject(new Error(`no reload changed ${key} within ${WATCH_DEADLINE_MS} ms`)),
      WATCH_DEADLINE_MS,
    );
    const on = (changes: ReadonlyMap<string, unknown>): void => {
      if (!changes.has(key)) return;
      clearTimeout(deadline);
      r.off('change', on);
      resolve();
    };
    r.on('change', on);
  });
  await write();
  await seen;
}

test(
  'a document that gains a typo keeps serving its last good version, with file:line in the error',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    await withDirectory(async (r, dir, logs) => {
      await change(r, () =>
        writeFile(path.join(dir, 'm.yaml'), `${pod('web-0', '10.1.0.5')}---\n${pod('web-1', '10.1.0.6')}`),
      );
      assert.deepEqual(keys(r), ['Pod/shop/web-0', 'Pod/shop/web-1']);
      await change(r, () =>
        writeFile(
          path.join(dir, 'm.yaml'),
          `${pod('web-0', '10.1.0.5')}---\n${pod('web-1', '10.1.0.7').replace('metadata:', 'metdata:')}`,
        ),
      );
      assert.deepEqual(keys(r), ['Pod/shop/web-0', 'Pod/shop/web-1']);
      assert.equal(
        podIp(r.all().find((o) => o.metadata.name === 'web-1')),
        '10.1.0.6',
        'the last good version, not the broken one',
      );
      assert.ok(
        logs.some((l) => l.includes(`${path.join(dir, 'm.yaml')}:9: Pod: metdata: unknown field \\"metdata\\"`)),
        logs.join(''),
      );
      // Fixed: the new version is served; removed from a file without problems: gone.
      await change(r, () => writeFile(path.join(dir, 'm.yaml'), pod('web-1', '10.1.0.7')));
      assert.deepEqual(keys(r), ['Pod/shop/web-1']);
      assert.equal(podIp(r.all()[0]), '10.1.0.7');
    });
  },
);

test('a half-written file never removes the objects it held', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDirectory(async (r, dir) => {
    const full = `${pod('web-0', '10.1.0.5')}---\n${pod('web-1', '10.1.0.6')}---\n${SERVICE}`;
    await change(r, () => writeFile(path.join(dir, 'm.yaml'), full));
    assert.deepEqual(keys(r), ['Pod/shop/web-0', 'Pod/shop/web-1', 'Service/shop/web']);
    await change(r, () => writeFile(path.join(dir, 'm.yaml'), full.slice(0, full.indexOf('web-1') + 12)));
    assert.deepEqual(keys(r), ['Pod/shop/web-0', 'Pod/shop/web-1', 'Service/shop/web']);
  });
});

test(
  'a deleted and re-created config directory is watched again; while it is gone the last good state is served',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    await withDirectory(
      async (r, dir, logs) => {
        await change(r, () => writeFile(path.join(dir, 'm.yaml'), pod('web-0', '10.1.0.5')));
        const mark = logs.length;
        await logged('cannot read the config directory; serving the last good state', () =>
          rm(dir, { recursive: true }),
        );
        assert.deepEqual(keys(r), ['Pod/shop/web-0']);
        await mkdir(`${dir}.new`);
        await writeFile(path.join(`${dir}.new`, 'm.yaml'), pod('web-9', '10.1.0.9'));
        await change(r, () => rename(`${dir}.new`, dir));
        // The re-created directory is watched: a later edit in it is seen.
        await change(r, () => writeFile(path.join(dir, 'n.yaml'), SERVICE));
        assert.deepEqual(keys(r), ['Pod/shop/web-9', 'Service/shop/web']);
        assert.ok(
          !logs.slice(mark).some((l) => l.includes('"objects":0')),
          'never an empty state while the directory was gone',
        );
      },
      async (root) => {
        const d = path.join(root, 'config');
        await mkdir(d);
        return d;
      },
    );
  },
);

test('a ConfigMap-style ..data symlink swap is seen', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDirectory(
    async (r, dir) => {
      assert.deepEqual(keys(r), ['Pod/shop/web-0']);
      // The swap takes several steps (new directory, then the symlink): a reload may see the old ..data first.
      await changeOf(r, 'Service/shop/web', () =>
        atomicWriterUpdate(dir, { 'mesh.yaml': `${pod('web-0', '10.1.0.5')}---\n${SERVICE}` }),
      );
      assert.deepEqual(keys(r), ['Pod/shop/web-0', 'Service/shop/web']);
    },
    async (root) => {
      await atomicWriterUpdate(root, { 'mesh.yaml': pod('web-0', '10.1.0.5') });
      return root;
    },
  );
});

test(
  'a refused AuthorizationPolicy with no good version stands in as deny-all for its namespace',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    await withDirectory(async (r, dir) => {
      await change(r, () =>
        writeFile(
          path.join(dir, 'p.yaml'),
          'apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: p, namespace: shop}\nspec:\n  selector: {matchLabels: [app, web]}\n',
        ),
      );
      const p = r.all().find((o) => o.kind === 'AuthorizationPolicy');
      assert.deepEqual(p?.spec, { action: 'DENY', rules: [{}] });
    });
  },
);

test(
  'duplicate objects and duplicate IPs are warned about with file:line; the first definition wins',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    await withDirectory(async (r, dir, logs) => {
      await writeFile(path.join(dir, 'a.yaml'), pod('web-0', '10.1.0.5'));
      await change(r, () =>
        writeFile(path.join(dir, 'b.yaml'), `${pod('web-0', '10.1.0.8')}---\n${pod('web-1', '10.1.0.5')}`),
      );
      assert.deepEqual(keys(r), ['Pod/shop/web-0', 'Pod/shop/web-1']);
      assert.equal(podIp(r.all().find((o) => o.metadata.name === 'web-0')), '10.1.0.5');
      assert.ok(
        logs.some((l) =>
          l.includes(`${path.join(dir, 'b.yaml')}:1: Pod/shop/web-0 is also defined at ${path.join(dir, 'a.yaml')}:1`),
        ),
        logs.join(''),
      );
      assert.ok(
        logs.some((l) =>
          l.includes(
            `${path.join(dir, 'b.yaml')}:7: Pod/shop/web-1 claims IP 10.1.0.5, already claimed by Pod/shop/web-0`,
          ),
        ),
        logs.join(''),
      );
    });
  },
);

test(
  'a reload reports only the objects that changed; files and documents whose text did not change are not parsed again',
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    await withDirectory(async (r, dir) => {
      await change(r, async () => {
        await writeFile(path.join(dir, 'n.yaml'), SERVICE);
        await writeFile(path.join(dir, 'm.yaml'), `${pod('web-0', '10.1.0.5')}---\n${pod('web-1', '10.1.0.6')}`);
      });
      const service = r.get('Service/shop/web');
      const web0 = r.get('Pod/shop/web-0');
      const [changes] = await eventAfter<[ObjectChanges]>(r, 'change', () =>
        writeFile(path.join(dir, 'm.yaml'), `${pod('web-0', '10.1.0.5')}---\n${pod('web-1', '10.1.0.7')}`),
      );
      assert.deepEqual([...changes.keys()], ['Pod/shop/web-1']);
      assert.equal(podIp(changes.get('Pod/shop/web-1')), '10.1.0.7');
      assert.equal(r.get('Service/shop/web'), service, 'the untouched file was not parsed again');
      assert.equal(r.get('Pod/shop/web-0'), web0, 'nor was the unchanged document before the edited one');
      const [removal] = await eventAfter<[ObjectChanges]>(r, 'change', () =>
        writeFile(path.join(dir, 'm.yaml'), pod('web-0', '10.1.0.5')),
      );
      assert.deepEqual([...removal.entries()], [['Pod/shop/web-1', undefined]]);
    });
  },
);
