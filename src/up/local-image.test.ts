import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AMESH_IMAGE_CLI, isAmeshImage, localImageCommand } from './local-image.js';

test('the amesh image is named by its repository: any registry, path, tag or digest', () => {
  for (const image of [
    'amesh',
    'amesh:0.1.0',
    'localhost/amesh:0.1.0',
    'registry.example:5000/team/amesh:1.2',
    'docker.io/x/amesh@sha256:abc',
  ])
    assert.equal(isAmeshImage(image), true, image);
  for (const image of [undefined, 'busybox', 'docker.io/istio/ztunnel:1.24.0', 'amesh-tools:1', 'registry:5000/img'])
    assert.equal(isAmeshImage(image), false, String(image));
});

test("a container of the amesh image runs its CLI (by name or by the image's path) from the launcher mounted at the image's path, with the build mounted at its own path over any volume; other commands and images are left alone", () => {
  const mapped = {
    cmd: AMESH_IMAGE_CLI,
    mounts: [
      { source: '/l', destination: AMESH_IMAGE_CLI, readOnly: true },
      { source: '/tmp/checkout', destination: '/tmp/checkout', readOnly: true },
    ],
  };
  assert.deepEqual(localImageCommand('localhost/amesh:1', 'amesh', '/l', '/tmp/checkout'), mapped);
  assert.deepEqual(localImageCommand('localhost/amesh:1', AMESH_IMAGE_CLI, '/l', '/tmp/checkout'), mapped);
  assert.equal(localImageCommand('localhost/amesh:1', 'sh', '/l'), undefined);
  assert.equal(localImageCommand('busybox', 'amesh', '/l'), undefined);
});
