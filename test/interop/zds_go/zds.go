package main

// The few ZDS messages (Istio's zds.proto, package istio.workload.zds), encoded and decoded by hand from the
// protobuf wire format: Debian's Go has no protobuf runtime offline, and these messages are a handful of
// strings and one varint. Field numbers are ztunnel's: ZdsHello{version 1}; WorkloadRequest{add 1, del 2,
// snapshot_sent 3, keep 5}; AddWorkload{uid 1, workload_info 2}; WorkloadInfo{name 1, namespace 2,
// service_account 3}; KeepWorkload{uid 1}; DelWorkload{uid 2}; WorkloadResponse{ack 1}; Ack{error 1}.

import (
	"errors"
	"fmt"
)

const (
	wireVarint = 0
	wireI64    = 1
	wireLen    = 2
	wireI32    = 5
)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendLen(b []byte, field int, data []byte) []byte {
	b = appendVarint(b, uint64(field<<3|wireLen))
	b = appendVarint(b, uint64(len(data)))
	return append(b, data...)
}

func appendString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	return appendLen(b, field, []byte(s))
}

func readVarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errors.New("bad varint")
}

// field is one decoded field: a varint value, or the bytes of a length-delimited one.
type field struct {
	num   int
	wire  int
	value uint64
	bytes []byte
}

func parseFields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		tag, n, err := readVarint(b)
		if err != nil {
			return nil, err
		}
		b = b[n:]
		f := field{num: int(tag >> 3), wire: int(tag & 7)}
		switch f.wire {
		case wireVarint:
			if f.value, n, err = readVarint(b); err != nil {
				return nil, err
			}
			b = b[n:]
		case wireLen:
			l, n, err := readVarint(b)
			if err != nil || uint64(len(b)-n) < l {
				return nil, errors.New("bad length")
			}
			f.bytes = b[n : n+int(l)]
			b = b[n+int(l):]
		case wireI64, wireI32:
			size := 8
			if f.wire == wireI32 {
				size = 4
			}
			if len(b) < size {
				return nil, errors.New("short fixed field")
			}
			b = b[size:]
		default:
			return nil, fmt.Errorf("wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

// stringField is the last value of a string field (proto3: last one wins).
func stringField(b []byte, num int) (string, error) {
	fs, err := parseFields(b)
	if err != nil {
		return "", err
	}
	s := ""
	for _, f := range fs {
		if f.num == num && f.wire == wireLen {
			s = string(f.bytes)
		}
	}
	return s, nil
}

type workloadInfo struct{ name, namespace, serviceAccount string }

// request is a WorkloadRequest: kind is add, keep, del or snapshot_sent.
type request struct {
	kind string
	uid  string
	info *workloadInfo
}

func encodeHello() []byte { return appendVarint(appendVarint(nil, 1<<3|wireVarint), 1) }

func decodeHello(b []byte) (uint64, error) {
	fs, err := parseFields(b)
	if err != nil {
		return 0, err
	}
	for _, f := range fs {
		if f.num == 1 && f.wire == wireVarint {
			return f.value, nil
		}
	}
	return 0, nil
}

func encodeAck(errText string) []byte { return appendLen(nil, 1, appendString(nil, 1, errText)) }

func decodeAck(b []byte) (string, error) {
	fs, err := parseFields(b)
	if err != nil {
		return "", err
	}
	for _, f := range fs {
		if f.num == 1 && f.wire == wireLen {
			return stringField(f.bytes, 1)
		}
	}
	return "", errors.New("WorkloadResponse without ack")
}

func encodeRequest(r request) []byte {
	switch r.kind {
	case "add":
		body := appendString(nil, 1, r.uid)
		if r.info != nil {
			info := appendString(nil, 1, r.info.name)
			info = appendString(info, 2, r.info.namespace)
			info = appendString(info, 3, r.info.serviceAccount)
			body = appendLen(body, 2, info)
		}
		return appendLen(nil, 1, body)
	case "keep":
		return appendLen(nil, 5, appendString(nil, 1, r.uid))
	case "del":
		return appendLen(nil, 2, appendString(nil, 2, r.uid))
	default:
		return appendLen(nil, 3, nil)
	}
}

func decodeRequest(b []byte) (request, error) {
	fs, err := parseFields(b)
	if err != nil {
		return request{}, err
	}
	var r request
	for _, f := range fs {
		if f.wire != wireLen {
			continue
		}
		switch f.num {
		case 1:
			r = request{kind: "add"}
			if r.uid, err = stringField(f.bytes, 1); err != nil {
				return r, err
			}
			inner, err := parseFields(f.bytes)
			if err != nil {
				return r, err
			}
			for _, g := range inner {
				if g.num == 2 && g.wire == wireLen {
					var w workloadInfo
					w.name, _ = stringField(g.bytes, 1)
					w.namespace, _ = stringField(g.bytes, 2)
					w.serviceAccount, _ = stringField(g.bytes, 3)
					r.info = &w
				}
			}
		case 5:
			r = request{kind: "keep"}
			r.uid, err = stringField(f.bytes, 1)
		case 2:
			r = request{kind: "del"}
			r.uid, err = stringField(f.bytes, 2)
		case 3:
			r = request{kind: "snapshot_sent"}
		}
		if err != nil {
			return r, err
		}
	}
	if r.kind == "" {
		return r, errors.New("WorkloadRequest without payload")
	}
	return r, nil
}
