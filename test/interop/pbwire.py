"""Protobuf wire format by hand: enough to encode requests and decode replies by field number, so the interop
tests check the wire itself instead of sharing amesh's .proto files."""


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def field(num, wire_type, payload):
    """One field: wire type 0 takes an encoded varint payload, wire type 2 a byte string."""
    key = varint((num << 3) | wire_type)
    return key + varint(len(payload)) + payload if wire_type == 2 else key + payload


def read_varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def fields(b):
    """field number -> list of values (ints for varints, bytes for length-delimited)."""
    out, i = {}, 0
    while i < len(b):
        key, i = read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(b, i)
        elif wt == 2:
            ln, i = read_varint(b, i)
            v, i = b[i:i + ln], i + ln
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        else:
            raise ValueError("wire type %d" % wt)
        out.setdefault(num, []).append(v)
    return out
