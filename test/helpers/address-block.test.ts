import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ADDRESS_BLOCKS, inBlock, loopbackLiterals } from './address-block.js';
import { packageRoot } from '../../src/lib/package-root.js';

const REPO = packageRoot();
/** This table and its test name addresses to explain them, not to use them. */
const SELF = ['test/helpers/address-block.ts', 'test/helpers/address-block.test.ts'];

/** Every TypeScript file under test/ (test files and their helpers), relative to the repository. */
function testTree(dir = 'test'): string[] {
  return readdirSync(path.join(REPO, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) return testTree(rel);
    return e.name.endsWith('.ts') && !SELF.includes(rel) ? [rel] : [];
  });
}

const literals = (file: string): string[] => loopbackLiterals(readFileSync(path.join(REPO, file), 'utf8'));

test('the literal matcher finds loopback addresses and address prefixes, and leaves 127.0.0.1 to everyone', () => {
  assert.deepEqual(
    loopbackLiterals(
      "'127.0.0.1' 127.0.0.10 `${'127.71.1'}.2` [127.33.0.2] 127.0.95.0/24 10.127.0.0.1 127.0.0.1:0 /127\\.0\\.94\\.10 +n1/",
    ),
    ['127.0.0.10', '127.71.1', '127.33.0.2', '127.0.95.0', '127.0.94.10'],
  );
  assert.equal(inBlock('127.33.0.2', 33), true);
  assert.equal(inBlock('127.0.33.2', 33), false);
});

test('no two test files share an address block, and each block is a 127.N.0.0/16 other than 127.0.0.0/16', () => {
  const owners = new Map<number, string[]>();
  for (const [file, block] of Object.entries(ADDRESS_BLOCKS)) {
    assert.ok(Number.isInteger(block) && block >= 1 && block <= 255, `${file}: block ${block}`);
    owners.set(block, [...(owners.get(block) ?? []), file]);
  }
  assert.deepEqual(
    [...owners].filter(([, files]) => files.length > 1),
    [],
    'blocks with more than one owner',
  );
});

test('every file in the address table exists and uses its block', () => {
  for (const [file, block] of Object.entries(ADDRESS_BLOCKS)) {
    assert.ok(existsSync(path.join(REPO, file)), `${file} is in the address table but does not exist`);
    assert.ok(
      literals(file).some((a) => inBlock(a, block)),
      `${file} names no address of 127.${block}.0.0/16: drop it from the table`,
    );
  }
});

test('no file under test/ names a loopback address outside its own block (only 127.0.0.1 is shared)', () => {
  const strays = testTree().flatMap((file) => {
    const block = ADDRESS_BLOCKS[file];
    return [...new Set(literals(file))]
      .filter((a) => block === undefined || !inBlock(a, block))
      .map(
        (a) => `${file}: ${a} (${block === undefined ? 'the file has no block' : `its block is 127.${block}.0.0/16`})`,
      );
  });
  assert.deepEqual(strays, [], 'add the file to test/helpers/address-block.ts or move the address into its block');
});
