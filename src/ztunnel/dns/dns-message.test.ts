import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decode, encode, RECURSION_DESIRED, type StringAnswer } from 'dns-packet';
import { RCODE, encodeResponse, parseQuery, udpLimit, type DnsQuery } from './dns-message.js';
import { FrameDecoder, frame } from './dns-tcp-frames.js';

function parsed(buf: Buffer): DnsQuery {
  const p = parseQuery(buf);
  assert.ok(p !== undefined && 'query' in p);
  return p.query;
}

const many = (n: number): StringAnswer[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'A', name: 'big.example', ttl: 30, data: `198.18.0.${i + 1}` }));

test('a response echoes ID, question, RD and the EDNS version and DO bit, with a payload size of at least 512', () => {
  const q = parsed(
    encode({
      type: 'query',
      id: 77,
      flags: RECURSION_DESIRED,
      questions: [{ type: 'A', name: 'x.example' }],
      additionals: [
        {
          type: 'OPT',
          name: '.',
          udpPayloadSize: 256,
          extendedRcode: 0,
          ednsVersion: 0,
          flags: 0x8000,
          flag_do: true,
          options: [],
        },
      ],
    }),
  );
  assert.equal(udpLimit(q), 512);
  const r = decode(
    encodeResponse(q, { rcode: RCODE.NXDOMAIN, authoritative: false, answers: [], additionals: [] }, 512),
  ) as ReturnType<typeof decode> & { rcode: string };
  assert.equal(r.id, 77);
  assert.equal(r.rcode, 'NXDOMAIN');
  assert.ok(r.flag_rd && r.flag_ra && !r.flag_aa);
  assert.deepEqual(r.questions, [{ type: 'A', name: 'x.example', class: 'IN' }]);
  const opt = r.additionals?.find((a) => a.type === 'OPT');
  assert.ok(opt !== undefined && opt.type === 'OPT');
  assert.equal(opt.udpPayloadSize, 512);
  assert.equal(opt.flag_do, true);
});

test('UDP truncation keeps as many answers as fit the limit, drops additionals and sets TC', () => {
  const q = parsed(encode({ type: 'query', id: 1, questions: [{ type: 'A', name: 'big.example' }] }));
  const out = encodeResponse(
    q,
    { rcode: RCODE.NOERROR, authoritative: false, answers: many(100), additionals: many(1) },
    512,
  );
  assert.ok(out.length <= 512);
  const r = decode(out);
  assert.equal(r.flag_tc, true);
  assert.deepEqual(r.additionals, []);
  const fitted = r.answers?.length ?? 0;
  assert.ok(fitted > 0 && fitted < 100);
  const oneMore = encode({ ...r, answers: many(fitted + 1) });
  assert.ok(oneMore.length > 512, 'no room was left for another answer');
  const whole = decode(
    encodeResponse(q, { rcode: RCODE.NOERROR, authoritative: false, answers: many(100), additionals: [] }, 65_535),
  );
  assert.equal(whole.flag_tc, false);
  assert.equal(whole.answers?.length, 100);
});

test('malformed queries: no header is dropped, a response or a bad body is FORMERR, another opcode NOTIMP', () => {
  assert.equal(parseQuery(Buffer.alloc(11)), undefined);
  const rcodeOf = (buf: Buffer): string => {
    const p = parseQuery(buf);
    assert.ok(p !== undefined && 'reply' in p);
    return (decode(p.reply) as { rcode?: string }).rcode ?? '';
  };
  const good = encode({ type: 'query', id: 5, questions: [{ type: 'A', name: 'x.example' }] });
  assert.equal(rcodeOf(good.subarray(0, good.length - 3)), 'FORMERR');
  assert.equal(rcodeOf(encode({ type: 'response', id: 5, questions: [{ type: 'A', name: 'x.example' }] })), 'FORMERR');
  assert.equal(rcodeOf(encode({ type: 'query', id: 5, questions: [] })), 'FORMERR');
  const update = Buffer.from(good);
  update.writeUInt16BE(5 << 11, 2);
  assert.equal(rcodeOf(update), 'NOTIMP');
});

test('TCP frames: split and coalesced messages come out whole; a frame longer than the limit is refused before buffering', () => {
  const d = new FrameDecoder(100);
  const two = Buffer.concat([frame(Buffer.from('hello')), frame(Buffer.from('dns'))]);
  assert.deepEqual(d.push(two.subarray(0, 4)), []);
  assert.deepEqual(d.push(two.subarray(4))?.map(String), ['hello', 'dns']);
  const over = Buffer.alloc(2);
  over.writeUInt16BE(101);
  assert.equal(new FrameDecoder(100).push(over), undefined);
});
