/**
 * Decodes Huffman-coded string literals (RFC 7541 §5.2) with a table-driven state machine that consumes four
 * bits at a time. The states are the 256 internal nodes of the code's tree; for each state and nibble, the
 * table holds the state after it, the symbol it completed (at most one: the shortest code has 5 bits), and
 * whether it hit EOS. A string may end only in a state whose path since the last symbol is at most 7 one-bits:
 * that path is the padding, which §5.2 requires to be a prefix of EOS shorter than a byte.
 */
import { compressionError } from './compression-error.js';
import { HUFFMAN_CODE, HUFFMAN_EOS, HUFFMAN_SYMBOLS } from './huffman-code.js';

/** Bits of a transition entry: next state in bits 0-7, the completed symbol in bits 16-23. */
const EMITS = 1 << 8;
const HITS_EOS = 1 << 9;
const ACCEPTS = 1 << 10;
const SYMBOL_SHIFT = 16;
const STATE_MASK = 0xff;

/** Padding longer than this many bits is a decoding error (§5.2). */
const MAX_PADDING_BITS = 7;

const transitions = buildTransitions();

function buildTransitions(): Uint32Array {
  // The code tree: node 0 is the root, children[node * 2 + bit] is an internal node (> 0) or a leaf, ~symbol (< 0).
  const children: number[] = [0, 0];
  const depth: number[] = [0];
  const allOnes: boolean[] = [true];
  for (let sym = 0; sym < HUFFMAN_SYMBOLS; sym++) {
    const code = HUFFMAN_CODE[sym * 2]!;
    const length = HUFFMAN_CODE[sym * 2 + 1]!;
    let node = 0;
    for (let i = length - 1; i > 0; i--) {
      const bit = (code >>> i) & 1;
      let next = children[node * 2 + bit]!;
      if (next === 0) {
        next = depth.length;
        children[node * 2 + bit] = next;
        children.push(0, 0);
        depth.push(depth[node]! + 1);
        allOnes.push(allOnes[node]! && bit === 1);
      }
      node = next;
    }
    children[node * 2 + (code & 1)] = ~sym;
  }
  const states = depth.length;
  if (states !== 256 || children.includes(0, 2))
    throw new Error('HPACK Huffman code table is not a complete prefix code');

  const table = new Uint32Array(states * 16);
  for (let state = 0; state < states; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let i = 3; i >= 0; i--) {
        const next = children[node * 2 + ((nibble >>> i) & 1)]!;
        if (next > 0) {
          node = next;
          continue;
        }
        const sym = ~next;
        if (sym === HUFFMAN_EOS) entry |= HITS_EOS;
        else entry |= EMITS | (sym << SYMBOL_SHIFT);
        node = 0;
      }
      if (allOnes[node]! && depth[node]! <= MAX_PADDING_BITS) entry |= ACCEPTS;
      table[state * 16 + nibble] = entry | node;
    }
  }
  return table;
}

/** Decoded bytes before they become a string; grown to the longest string seen (8 bits decode to at most 8/5 octets). */
let scratch = Buffer.alloc(256);

/** Decodes bytes [start, end) of `src` to a latin1 string (one char per octet). */
export function huffmanDecode(src: Uint8Array, start: number, end: number): string {
  const most = Math.ceil(((end - start) * 8) / 5);
  if (scratch.length < most) scratch = Buffer.alloc(Math.max(most, scratch.length * 2));
  let n = 0;
  let state = 0;
  let accepts = true;
  for (let i = start; i < end; i++) {
    const byte = src[i]!;
    for (let shift = 4; shift >= 0; shift -= 4) {
      const entry = transitions[state * 16 + ((byte >>> shift) & 0xf)]!;
      if ((entry & HITS_EOS) !== 0) throw compressionError('Huffman-coded string contains EOS', i);
      if ((entry & EMITS) !== 0) scratch[n++] = entry >>> SYMBOL_SHIFT;
      state = entry & STATE_MASK;
      accepts = (entry & ACCEPTS) !== 0;
    }
  }
  if (!accepts)
    throw compressionError('Huffman-coded string ends in padding longer than 7 bits or not all ones', end - 1);
  return scratch.toString('latin1', 0, n);
}
