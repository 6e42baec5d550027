import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, fstatSync, mkdirSync, rmdirSync, writeFileSync, rmSync } from 'node:fs';
import { randomInt, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMeshError } from '../src/lib/errors.js';
import { netnsId, sameNetns as sameId } from '../src/native/native.js';
import { PodNetnsCache } from '../src/cni/agent/netns-cache.js';
import { mustRun, netnsSkip, TestNetns } from './helpers/netns.js';

const skip = netnsSkip();

/** A pod: a throwaway netns holding `ips` (on lo), with a process running in it until `stop()`. */
class ProcPod {
  private constructor(
    readonly ns: TestNetns,
    readonly process: ChildProcess,
  ) {}

  static async start(ips: readonly string[]): Promise<ProcPod> {
    const ns = await TestNetns.create();
    for (const ip of ips)
      await ns.exec('ip', ['addr', 'add', ip.includes(':') ? `${ip}/128` : `${ip}/32`, 'dev', 'lo']);
    return new ProcPod(ns, await ProcPod.spawnIn(ns));
  }

  /** A process that has entered `ns` (it says so on stdout) and waits there. */
  static async spawnIn(ns: TestNetns): Promise<ChildProcess> {
    const p = spawn('ip', ['netns', 'exec', ns.name, 'sh', '-c', 'echo in; exec sleep 600'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await once(p.stdout, 'data');
    return p;
  }

  async stop(): Promise<void> {
    await stopProcess(this.process);
    await this.ns.remove();
  }
}

async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = once(p, 'exit');
  p.kill();
  await exited;
}

/** Addresses no other test uses: this test's loopback range, and a matching IPv6 one. */
const podIp = (): string => `127.92.0.${randomInt(10, 250)}`;
const podIpv6 = (): string => `fd00:92::${randomInt(10, 250).toString(16)}`;

async function withPods(
  specs: (readonly string[])[],
  body: (pods: ProcPod[], cache: PodNetnsCache) => Promise<void> | void,
): Promise<void> {
  const pods: ProcPod[] = [];
  const cache = new PodNetnsCache();
  try {
    for (const ips of specs) pods.push(await ProcPod.start(ips));
    await body(pods, cache);
  } finally {
    cache.closeAll();
    for (const p of pods) await p.stop();
  }
}

const sameNetns = (fd: number | undefined, ns: TestNetns): boolean => {
  assert.ok(fd !== undefined, 'no netns fd');
  return sameId(netnsId(fd), netnsId(ns.path));
};
/** Addresses of the tests added with the scan's race and ambiguity checks. */
const newPodIp = (): string => `127.92.1.${randomInt(10, 250)}`;

test(
  "agent restart: the /proc scan finds the netns of a process running in a pod by the pod's IPv4 or IPv6 address, and caches its fd",
  { skip },
  () => {
    const [v4, v6] = [podIp(), podIpv6()];
    return withPods([[v4], [v6]], async ([a, b], cache) => {
      const found = await cache.scanProc([
        { uid: 'uid-a', ips: [v4] },
        { uid: 'uid-b', ips: ['10.255.92.1', v6.toUpperCase()] },
        { uid: 'uid-none', ips: ['10.255.92.2'] },
        { uid: 'uid-no-ips', ips: [] },
      ]);
      assert.deepEqual([...found.keys()].sort(), ['uid-a', 'uid-b']);
      assert.ok(sameNetns(found.get('uid-a'), a!.ns));
      assert.ok(sameNetns(found.get('uid-b'), b!.ns));
      assert.equal(cache.get('uid-a'), found.get('uid-a'));
      // Pods already cached are not looked for again.
      assert.equal((await cache.scanProc([{ uid: 'uid-a', ips: [v4] }])).size, 0);
    });
  },
);

test(
  "fail closed: when two network namespaces hold a pod's IP (a stale sandbox), the scan takes neither and fails naming both; other pods are cached",
  { skip },
  () => {
    const [shared, alone] = [newPodIp(), newPodIp()];
    return withPods([[shared], [shared], [alone]], async ([a, b, c], cache) => {
      // A second process in one netns changes nothing: each netns is one candidate.
      const second = await ProcPod.spawnIn(a!.ns);
      try {
        const scan = cache.scanProc([
          { uid: 'uid-x', ips: [shared] },
          { uid: 'uid-c', ips: [alone] },
        ]);
        const id = (ns: TestNetns): string => {
          const { dev, ino } = netnsId(ns.path);
          return `${dev}:${ino}`;
        };
        await assert.rejects(
          scan,
          (e) =>
            isMeshError(e, 'AGENT_ERR_POD_NETNS') &&
            e.message.includes('uid-x') &&
            e.message.includes(id(a!.ns)) &&
            e.message.includes(id(b!.ns)),
        );
        assert.equal(cache.get('uid-x'), undefined);
        assert.ok(sameNetns(cache.get('uid-c'), c!.ns));
      } finally {
        await stopProcess(second);
      }
    });
  },
);

/** A cgroup of its own for `p` (named after `name`), as a kubelet puts a pod's processes in one; removed by the returned function. */
function inCgroup(p: ChildProcess, name: string): () => void {
  const root = existsSync('/sys/fs/cgroup/cgroup.procs') ? '/sys/fs/cgroup' : '/sys/fs/cgroup/pids';
  const dir = path.join(root, name);
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'cgroup.procs'), String(p.pid));
  return () => {
    // The process has exited: the cgroup is empty.
    rmdirSync(dir);
  };
}

test(
  "two network namespaces hold a pod's IP (another cluster's pod on this machine): the one whose process's cgroup names the pod's UID is taken, as Istio matches cgroups",
  { skip },
  () => {
    const shared = newPodIp();
    const uid = randomUUID();
    return withPods([[shared], [shared]], async ([, b], cache) => {
      const own = await ProcPod.spawnIn(b!.ns);
      const leave = inCgroup(own, `amesh-test-${uid}-app`);
      try {
        const found = await cache.scanProc([{ uid, ips: [shared] }]);
        assert.ok(sameNetns(found.get(uid), b!.ns));
      } finally {
        await stopProcess(own);
        leave();
      }
    });
  },
);

test('a pod removed while the /proc scan runs is not cached by the scan', { skip }, () => {
  const ip = newPodIp();
  return withPods([[ip]], async (_pods, cache) => {
    const scan = cache.scanProc([{ uid: 'uid-gone', ips: [ip] }]);
    cache.remove('uid-gone');
    assert.equal((await scan).size, 0);
    assert.equal(cache.get('uid-gone'), undefined);
  });
});

test('open refuses a FIFO at the netns path without blocking on it (AGENT_ERR_POD_NETNS)', { skip }, async () => {
  const fifo = path.join(tmpdir(), `amesh-fifo-netns-${process.pid}`);
  await mustRun('mkfifo', [fifo]);
  const cache = new PodNetnsCache();
  try {
    assert.throws(
      () => cache.open('uid-a', fifo),
      (e) => isMeshError(e, 'AGENT_ERR_POD_NETNS') && /not a network namespace/.test(e.message),
    );
  } finally {
    rmSync(fifo);
  }
});

test(
  "open caches a pod's netns fd from its CNI netns path: the same netns reuses it, a new sandbox replaces it, remove closes it",
  { skip },
  () =>
    withPods([[podIp()], [podIp()]], ([a, b], cache) => {
      const fd = cache.open('uid-a', a!.ns.path);
      assert.ok(sameNetns(fd, a!.ns));
      assert.equal(cache.open('uid-a', a!.ns.path), fd);
      const replaced = cache.open('uid-a', b!.ns.path);
      assert.ok(sameNetns(replaced, b!.ns));
      assert.throws(() => fstatSync(fd), { code: 'EBADF' }, 'the replaced fd was closed');
      assert.deepEqual(cache.uids(), ['uid-a']);
      assert.equal(cache.remove('uid-a'), true);
      assert.throws(() => fstatSync(replaced), { code: 'EBADF' });
      assert.equal(cache.get('uid-a'), undefined);
      assert.equal(cache.remove('uid-a'), false);
    }),
);

test('open refuses a netns path that is missing or not a network namespace with AGENT_ERR_POD_NETNS', { skip }, () => {
  const cache = new PodNetnsCache();
  assert.throws(
    () => cache.open('uid-a', '/var/run/netns/amesh-t-missing'),
    (e) => isMeshError(e, 'AGENT_ERR_POD_NETNS') && /amesh-t-missing.*ENOENT/.test(e.message),
  );
  const file = path.join(tmpdir(), `amesh-not-netns-${process.pid}`);
  writeFileSync(file, '');
  try {
    assert.throws(
      () => cache.open('uid-a', file),
      (e) => isMeshError(e, 'AGENT_ERR_POD_NETNS') && /not a network namespace/.test(e.message),
    );
  } finally {
    rmSync(file);
  }
  assert.deepEqual(cache.uids(), []);
});
