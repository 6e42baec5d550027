import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { HeaderField } from '../src/h2/header-block.js';
import { HpackDecoder } from '../src/h2/hpack/hpack-decoder.js';
import { HpackEncoder } from '../src/h2/hpack/hpack-encoder.js';
import { pythonSkip, runPython } from './helpers/python.js';

const skip = pythonSkip('hpack', 'python3-hpack');

/** The table sizes a peer switches between: none, smaller than one large entry, C.5's, and HTTP/2's default. */
const TABLE_SIZES = [0, 64, 256, 1000, 4096];
const BLOCKS = 400;
const SEED = 0x5eed_4ac7;

/** xorshift32: a fixed seed, so a failure reproduces. */
function prng(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return Math.floor(((s >>> 0) / 2 ** 32) * n);
  };
}

interface EncodeStep {
  tableSize: number | null;
  huffman: boolean;
  fields: [string, string, boolean][];
}

/** Random header lists that stress the dynamic table: static names and values, repeats of recent fields, long values, latin1 octets. */
function randomSteps(seed: number): {
  encode: EncodeStep[];
  ours: { peerTableSize: number | null; fields: HeaderField[] }[];
} {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
  const staticNames = [
    ':authority',
    ':method',
    ':path',
    ':scheme',
    ':status',
    'content-type',
    'cookie',
    'set-cookie',
    'user-agent',
    'www-authenticate',
  ];
  const staticValues = ['GET', 'POST', '/', '/index.html', 'http', 'https', '200', '404', 'gzip, deflate', ''];
  const nameChars = 'abcdefghijklmnopqrstuvwxyz0123456789-_.';
  const valueChar = (): string =>
    rand(10) === 0 ? String.fromCharCode(0x80 + rand(128)) : String.fromCharCode(0x21 + rand(0x5e));
  const randomName = (): string =>
    Array.from({ length: 1 + rand(20) }, () => nameChars.charAt(rand(nameChars.length))).join('');
  const randomValue = (): string => {
    const length = rand(50) === 0 ? 200 + rand(3000) : rand(50);
    let v = '';
    for (let i = 0; i < length; i++) v += i > 0 && i < length - 1 && rand(8) === 0 ? ' ' : valueChar();
    return v;
  };
  const seen: HeaderField[] = [];
  const field = (): HeaderField => {
    const r = rand(10);
    if (r < 4 && seen.length > 0) return seen[Math.max(0, seen.length - 1 - rand(20))]!;
    const f: HeaderField = [r < 6 ? pick(staticNames) : randomName(), r < 5 ? pick(staticValues) : randomValue()];
    seen.push(f);
    return f;
  };
  const encode: EncodeStep[] = [];
  const ours: { peerTableSize: number | null; fields: HeaderField[] }[] = [];
  for (let i = 0; i < BLOCKS; i++) {
    const fields = Array.from({ length: 1 + rand(12) }, field);
    const tableSize = rand(25) === 0 ? pick(TABLE_SIZES) : null;
    encode.push({ tableSize, huffman: rand(4) !== 0, fields: fields.map(([n, v]) => [n, v, rand(10) === 0]) });
    ours.push({ peerTableSize: rand(12) === 0 ? pick(TABLE_SIZES) : null, fields });
  }
  return { encode, ours };
}

describe('HPACK against Python hpack (an independent RFC 7541 implementation)', { skip }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-hpack-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('random header lists round-trip both ways, with Huffman, dynamic table use and table size changes', async () => {
    const { encode, ours } = randomSteps(SEED);
    // Our encoder's blocks, with the table size the Python decoder advertises when each is encoded.
    const encoder = new HpackEncoder();
    let advertised = 4096;
    const decode = ours.map(({ peerTableSize, fields }) => {
      if (peerTableSize !== null) {
        advertised = peerTableSize;
        encoder.setPeerMaxTableSize(peerTableSize);
      }
      return { maxTableSize: advertised, block: encoder.encode(fields).toString('hex') };
    });
    const job = path.join(dir, 'job.json');
    await writeFile(job, JSON.stringify({ encode, decode }));
    const r = await runPython('hpack_peer.py', [job], 60_000);
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { encoded: string[]; decoded: HeaderField[][] };

    const limits = { maxTableSize: 4096, maxHeaderListSize: 1 << 20 };
    const decoder = new HpackDecoder(limits);
    let referencesEarlierBlocks = 0;
    let sizeUpdates = 0;
    out.encoded.forEach((block, i) => {
      const bytes = Buffer.from(block, 'hex');
      assert.deepEqual(
        decoder.decode(bytes),
        encode[i]!.fields.map(([n, v]) => [n, v]),
        `Python's block ${i} (seed ${SEED}): ${block}`,
      );
      // A block a fresh decoder cannot decode uses entries that earlier blocks put in the dynamic table.
      try {
        new HpackDecoder(limits).decode(bytes);
      } catch (e) {
        assert.match(String(e), /past the static table/);
        referencesEarlierBlocks++;
      }
      if ((bytes[0]! & 0xe0) === 0x20) sizeUpdates++;
    });
    assert.ok(
      referencesEarlierBlocks > BLOCKS / 10,
      `${referencesEarlierBlocks} of Python's blocks use entries from earlier blocks`,
    );
    assert.ok(sizeUpdates > 0, `${sizeUpdates} of Python's blocks start with a table size update`);
    out.decoded.forEach((fields, i) => assert.deepEqual(fields, ours[i]!.fields, `our block ${i} (seed ${SEED})`));
  });
});
