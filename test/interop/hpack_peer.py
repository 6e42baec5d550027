#!/usr/bin/python3
"""An HPACK peer on Python's hpack library (not ours), for interoperability tests.

Reads a JSON file {"encode": [...], "decode": [...]} and prints JSON {"encoded": [...], "decoded": [...]}:
- encode: one Encoder across the steps; each step {tableSize, huffman, fields: [[name, value, neverIndexed]]}
  sets the encoder's table size first when tableSize is not null, then encodes the fields; the block goes out
  as hex.
- decode: one Decoder across the steps; each step {maxTableSize, block} sets the size this peer advertises
  (the decoder then insists the block brings the table within it), decodes the hex block, and gives back its
  [name, value] pairs.
Strings are latin1 on both sides: one char per octet.
"""
import json
import sys

from hpack import Decoder, Encoder, NeverIndexedHeaderTuple


def latin1(s):
    return s.encode("latin-1")


def encode(steps):
    encoder = Encoder()
    blocks = []
    for step in steps:
        if step["tableSize"] is not None:
            encoder.header_table_size = step["tableSize"]
        fields = [NeverIndexedHeaderTuple(latin1(n), latin1(v)) if never else (latin1(n), latin1(v)) for n, v, never in step["fields"]]
        blocks.append(encoder.encode(fields, huffman=step["huffman"]).hex())
    return blocks


def decode(steps):
    decoder = Decoder(max_header_list_size=1 << 24)
    lists = []
    for step in steps:
        decoder.max_allowed_table_size = step["maxTableSize"]
        fields = decoder.decode(bytes.fromhex(step["block"]), raw=True)
        lists.append([[n.decode("latin-1"), v.decode("latin-1")] for n, v in fields])
    return lists


def main(path):
    with open(path, encoding="utf-8") as f:
        job = json.load(f)
    json.dump({"encoded": encode(job["encode"]), "decoded": decode(job["decode"])}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
