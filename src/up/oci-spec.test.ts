import { test } from 'node:test';
import assert from 'node:assert/strict';
import { missingMountParent, ociSpec, type OciSpecInput } from './oci-spec.js';

const input = (over: Partial<OciSpecInput> = {}): OciSpecInput => ({
  process: {
    args: ['/usr/bin/node', 'app.js'],
    env: ['A=1'],
    cwd: '/',
    user: { uid: 1000, gid: 1000 },
    capabilities: ['CAP_KILL'],
    noNewPrivileges: true,
  },
  hostname: 'web',
  netnsPath: '/run/netns/amesh-pod-1',
  host: [
    { name: 'usr', t: 'dir' },
    { name: 'proc', t: 'dir' },
    { name: 'run', t: 'dir' },
    { name: 'bin', t: 'symlink', target: 'usr/bin' },
  ],
  mounts: [{ destination: '/data', source: '/var/lib/x/data', readOnly: true }],
  overlays: [],
  readOnlyRootFilesystem: false,
  cgroupsPath: '/amesh-c/1-app',
  ...over,
});

type Spec = { mounts: { destination: string; type: string; options: string[] }[]; linux: Record<string, unknown> };

test("the root mirrors the host's directories, with the container's own /proc, /sys and /run, then its volumes", () => {
  const spec = ociSpec(input()) as unknown as Spec;
  assert.deepEqual(
    spec.mounts.map((m) => `${m.destination} ${m.type} ${m.options.join(',')}`),
    [
      '/usr bind rbind',
      '/proc proc nosuid,noexec,nodev',
      '/sys sysfs nosuid,noexec,nodev,ro',
      '/run tmpfs nosuid,nodev,mode=755',
      '/data bind rbind,ro,rprivate',
    ],
  );
  assert.deepEqual(spec.linux['namespaces'], [
    { type: 'network', path: '/run/netns/amesh-pod-1' },
    { type: 'mount' },
    { type: 'uts' },
  ]);
  assert.equal(spec.linux['rootfsPropagation'], undefined);
});

test("a hostNetwork container keeps the node's UTS namespace; HostToContainer makes the mount and the root rslave", () => {
  const spec = ociSpec(
    input({
      hostname: undefined,
      readOnlyRootFilesystem: true,
      mounts: [{ destination: '/run/netns', source: '/run/netns', readOnly: false, propagation: 'HostToContainer' }],
    }),
  ) as unknown as Spec;
  assert.deepEqual((spec.linux['namespaces'] as unknown[]).length, 2);
  assert.equal(spec.linux['rootfsPropagation'], 'rslave');
  assert.deepEqual(spec.mounts[0]!.options, ['rbind', 'ro'], 'readOnlyRootFilesystem makes the host mirror read-only');
  assert.deepEqual(spec.mounts.at(-1)!.options, ['rbind', 'rw', 'rslave']);
});

test('a missing mount point is made in the root or /run; one under a host directory overlays its nearest existing ancestor', () => {
  const existing = new Set(['/', '/etc', '/run', '/var', '/var/run']);
  const exists = (p: string): boolean => existing.has(p);
  const realpath = (p: string): string => (p === '/var/run' ? '/run' : p);
  assert.equal(missingMountParent('/etc', exists, realpath), undefined, 'exists: mounted over');
  assert.equal(missingMountParent('/data/x', exists, realpath), undefined, "made in the container's root");
  assert.equal(missingMountParent('/var/run/secrets/kubernetes.io/serviceaccount', exists, realpath), undefined);
  assert.equal(missingMountParent('/etc/istio/config', exists, realpath), '/etc');
});
