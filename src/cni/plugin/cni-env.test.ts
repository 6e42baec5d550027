import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { parseCniEnv } from './cni-env.js';

const ADD = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c0ffee', CNI_NETNS: '/var/run/netns/cni-1', CNI_IFNAME: 'eth0' };

const envError = (message: RegExp) => (e: unknown) => isMeshError(e, 'CNI_ERR_ENV') && message.test(e.message);

test('ADD needs CNI_CONTAINERID, CNI_NETNS and CNI_IFNAME, all missing ones named at once; CNI_PATH and CNI_ARGS are optional', () => {
  assert.deepEqual(parseCniEnv(ADD), {
    command: 'ADD',
    containerId: 'c0ffee',
    netns: '/var/run/netns/cni-1',
    ifName: 'eth0',
    args: '',
    path: '',
  });
  assert.throws(
    () => parseCniEnv({ CNI_COMMAND: 'ADD', CNI_IFNAME: 'eth0' }),
    envError(/missing for ADD: CNI_CONTAINERID, CNI_NETNS$/),
  );
});

test('DEL needs no CNI_NETNS (the pod netns may be gone), GC needs CNI_PATH, VERSION and STATUS only the command', () => {
  assert.equal(parseCniEnv({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c', CNI_IFNAME: 'eth0' }).netns, '');
  assert.throws(() => parseCniEnv({ CNI_COMMAND: 'GC' }), envError(/missing for GC: CNI_PATH/));
  assert.equal(parseCniEnv({ CNI_COMMAND: 'VERSION' }).command, 'VERSION');
  assert.equal(parseCniEnv({ CNI_COMMAND: 'STATUS' }).command, 'STATUS');
});

test('a missing or unknown CNI_COMMAND is an environment error naming the variable', () => {
  assert.throws(() => parseCniEnv({}), envError(/CNI_COMMAND is missing/));
  assert.throws(() => parseCniEnv({ CNI_COMMAND: '' }), envError(/CNI_COMMAND is missing/));
  assert.throws(() => parseCniEnv({ CNI_COMMAND: 'add' }), envError(/unknown CNI_COMMAND "add"/));
});

test('container IDs and interface names follow the reference library rules', () => {
  assert.throws(
    () => parseCniEnv({ ...ADD, CNI_CONTAINERID: '-leading-dash' }),
    envError(/CNI_CONTAINERID "-leading-dash" has invalid characters/),
  );
  assert.throws(() => parseCniEnv({ ...ADD, CNI_CONTAINERID: 'a/b' }), envError(/CNI_CONTAINERID/));
  assert.throws(() => parseCniEnv({ ...ADD, CNI_IFNAME: 'a-very-long-name0' }), envError(/longer than 15/));
  assert.throws(() => parseCniEnv({ ...ADD, CNI_IFNAME: '..' }), envError(/CNI_IFNAME/));
  assert.throws(() => parseCniEnv({ ...ADD, CNI_IFNAME: 'eth 0' }), envError(/whitespace/));
  assert.equal(parseCniEnv({ ...ADD, CNI_CONTAINERID: 'a_b.c-9', CNI_IFNAME: 'net1' }).ifName, 'net1');
});

test('the parsed environment is frozen', () => {
  assert.ok(Object.isFrozen(parseCniEnv(ADD)));
});
