// Command zds_go is an independent ZDS peer for amesh's interop tests, built only from Go's standard library
// (net.ListenUnix/DialUnix "unixpacket", syscall.UnixRights), shaped as Istio's ends of the protocol are:
//
//	zds_go agent SOCK NETNS_A NETNS_B   a node agent (Istio cni/pkg/nodeagent/ztunnelserver.go): listens on SOCK,
//	                                    prints "listening", then drives the ztunnel that connects through a fixed
//	                                    script, printing one line per request: "<step> ack" or "<step> nack: <error>"
//	zds_go agent-protocol-error SOCK CASE
//	                                    a node agent that breaks the protocol once SnapshotSent was acked: CASE is
//	                                    keep-after-snapshot, second-snapshot or add-without-info; prints the same
//	                                    lines, then "eof after a protocol error" when ztunnel hangs up
//	zds_go ztunnel SOCK                 a ztunnel (ztunnel src/inpod/protocol.rs): connects, says hello, prints one
//	                                    JSON line per request (an add's fd checked to be one network namespace),
//	                                    acks it (nacks a pod named "nack-me"), and prints {"kind":"eof"} at the end
//
// Failures exit 1 with the reason on stderr.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

const (
	deadline = 10 * time.Second
	// _IO(NSIO 0xb7, 0x3), linux/nsfs.h
	nsGetNstype = 0xb703
)

func main() {
	if len(os.Args) < 3 {
		fail(errors.New("usage: zds_go agent SOCK NETNS_A NETNS_B | zds_go agent-protocol-error SOCK CASE | zds_go ztunnel SOCK"))
	}
	var err error
	switch os.Args[1] {
	case "agent":
		err = agent(os.Args[2], os.Args[3], os.Args[4])
	case "agent-protocol-error":
		err = agentProtocolError(os.Args[2], os.Args[3])
	case "ztunnel":
		err = ztunnel(os.Args[2])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "zds_go:", err)
	os.Exit(1)
}

// read reads one datagram (1024-byte buffer as Istio's, truncation refused) and the fds that came with it.
func read(c *net.UnixConn) ([]byte, []int, error) {
	buf := make([]byte, 1024)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	if err := c.SetReadDeadline(time.Now().Add(deadline)); err != nil {
		return nil, nil, err
	}
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, nil, err
	}
	if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
		return nil, nil, errors.New("truncated message")
	}
	if n == 0 {
		return nil, nil, errEOF
	}
	var fds []int
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, nil, err
	}
	for _, m := range msgs {
		rights, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return nil, nil, err
		}
		fds = append(fds, rights...)
	}
	return buf[:n], fds, nil
}

var errEOF = errors.New("EOF")

func isEOF(err error) bool {
	return errors.Is(err, errEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

func send(c *net.UnixConn, data []byte, fds ...int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	if err := c.SetWriteDeadline(time.Now().Add(deadline)); err != nil {
		return err
	}
	_, _, err := c.WriteMsgUnix(data, oob, nil)
	return err
}

// agent listens as Istio's node agent does and drives the ztunnel that connects through a fixed script.
func agent(sock, netnsA, netnsB string) error {
	l, err := listenAgent(sock)
	if err != nil {
		return err
	}
	defer l.Close()
	open := func(path string) (int, error) { return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) }
	fdA, err := open(netnsA)
	if err != nil {
		return err
	}
	fdB, err := open(netnsB)
	if err != nil {
		return err
	}
	notNetns, err := open("/proc/self/ns/uts")
	if err != nil {
		return err
	}
	info := func(name string) *workloadInfo { return &workloadInfo{name, "default", name + "-sa"} }

	// First connection: a snapshot, steady-state updates, then bytes that are no WorkloadRequest.
	c, err := acceptHello(l)
	if err != nil {
		return err
	}
	steps := []struct {
		name string
		data []byte
		fds  []int
	}{
		{"add pod-a", encodeRequest(request{kind: "add", uid: "pod-a", info: info("pod-a")}), []int{fdA}},
		{"keep pod-k", encodeRequest(request{kind: "keep", uid: "pod-k"}), nil},
		{"snapshot_sent", encodeRequest(request{kind: "snapshot_sent"}), nil},
		{"add pod-b", encodeRequest(request{kind: "add", uid: "pod-b", info: info("pod-b")}), []int{fdB}},
		{"add pod-uts", encodeRequest(request{kind: "add", uid: "pod-uts", info: info("pod-uts")}), []int{notNetns}},
		{"del pod-a", encodeRequest(request{kind: "del", uid: "pod-a"}), nil},
		{"garbage", []byte{0x0a, 0x0e, 0x0a, 0x01}, nil},
	}
	for _, s := range steps {
		if err := exchange(c, s.name, s.data, s.fds...); err != nil {
			return err
		}
	}
	if err := expectEOF(c, "after garbage"); err != nil {
		return err
	}

	// Second connection (ztunnel reconnected): a snapshot naming pod-b again, then a second SnapshotSent.
	if c, err = acceptHello(l); err != nil {
		return err
	}
	if err := exchange(c, "add pod-b", encodeRequest(request{kind: "add", uid: "pod-b", info: info("pod-b")}), fdB); err != nil {
		return err
	}
	if err := exchange(c, "snapshot_sent", encodeRequest(request{kind: "snapshot_sent"})); err != nil {
		return err
	}
	if err := exchange(c, "second snapshot_sent", encodeRequest(request{kind: "snapshot_sent"})); err != nil {
		return err
	}
	return expectEOF(c, "after a second snapshot_sent")
}

// listenAgent listens on sock as the node agent does and prints "listening".
func listenAgent(sock string) (*net.UnixListener, error) {
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	fmt.Println("listening")
	return l, nil
}

// agentProtocolError sends an empty snapshot, then one request the protocol forbids after it (Istio's ztunnel
// src/inpod/statemanager.rs refuses each with a ProtocolError), and waits for ztunnel to hang up.
func agentProtocolError(sock, which string) error {
	var bad request
	var fds []int
	switch which {
	case "keep-after-snapshot":
		bad = request{kind: "keep", uid: "pod-k"}
	case "second-snapshot":
		bad = request{kind: "snapshot_sent"}
	case "add-without-info":
		// Any network namespace will do: ztunnel must refuse the Add before it looks at the fd.
		fd, err := syscall.Open("/proc/self/ns/net", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		bad, fds = request{kind: "add", uid: "pod-x"}, []int{fd}
	default:
		return fmt.Errorf("unknown protocol error %q", which)
	}
	l, err := listenAgent(sock)
	if err != nil {
		return err
	}
	defer l.Close()
	c, err := acceptHello(l)
	if err != nil {
		return err
	}
	if err := exchange(c, "snapshot_sent", encodeRequest(request{kind: "snapshot_sent"})); err != nil {
		return err
	}
	if err := exchange(c, which, encodeRequest(bad), fds...); err != nil {
		return err
	}
	return expectEOF(c, "after a protocol error")
}

func acceptHello(l *net.UnixListener) (*net.UnixConn, error) {
	if err := l.SetDeadline(time.Now().Add(deadline)); err != nil {
		return nil, err
	}
	c, err := l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	data, fds, err := read(c)
	if err != nil {
		return nil, fmt.Errorf("reading hello: %w", err)
	}
	if len(fds) != 0 {
		return nil, fmt.Errorf("hello came with %d fds", len(fds))
	}
	v, err := decodeHello(data)
	if err != nil {
		return nil, err
	}
	fmt.Printf("hello version=%d\n", v)
	return c, nil
}

// exchange sends one request and prints the ack or nack that answers it.
func exchange(c *net.UnixConn, step string, data []byte, fds ...int) error {
	if err := send(c, data, fds...); err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	reply, got, err := read(c)
	if err != nil {
		return fmt.Errorf("%s: reading the ack: %w", step, err)
	}
	if len(got) != 0 {
		return fmt.Errorf("%s: the ack came with %d fds", step, len(got))
	}
	ackErr, err := decodeAck(reply)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	if ackErr == "" {
		fmt.Printf("%s ack\n", step)
	} else {
		fmt.Printf("%s nack: %s\n", step, ackErr)
	}
	return nil
}

func expectEOF(c *net.UnixConn, when string) error {
	defer c.Close()
	_, _, err := read(c)
	if err == nil {
		return fmt.Errorf("%s: a datagram instead of the end of the connection", when)
	}
	if !isEOF(err) {
		return fmt.Errorf("%s: %w", when, err)
	}
	fmt.Printf("eof %s\n", when)
	return nil
}

// ztunnel connects as ztunnel does and answers every request, checking what comes with it.
func ztunnel(sock string) error {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := send(c, encodeHello()); err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	for {
		data, fds, err := read(c)
		if err != nil {
			if isEOF(err) {
				return out.Encode(map[string]string{"kind": "eof"})
			}
			return err
		}
		r, err := decodeRequest(data)
		if err != nil {
			return err
		}
		line := map[string]interface{}{"kind": r.kind, "uid": r.uid, "fds": len(fds)}
		if r.info != nil {
			line["name"], line["namespace"], line["serviceAccount"] = r.info.name, r.info.namespace, r.info.serviceAccount
		}
		for _, fd := range fds {
			nstype, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), nsGetNstype, 0)
			if errno != 0 {
				return fmt.Errorf("ioctl NS_GET_NSTYPE: %w", errno)
			}
			line["netns"] = nstype == syscall.CLONE_NEWNET
			var st syscall.Stat_t
			if err := syscall.Fstat(fd, &st); err != nil {
				return err
			}
			line["ino"] = fmt.Sprint(st.Ino)
			syscall.Close(fd)
		}
		if err := out.Encode(line); err != nil {
			return err
		}
		reply := ""
		if r.uid == "nack-me" {
			reply = "failure to start proxy : the go peer refuses nack-me"
		}
		if err := send(c, encodeAck(reply)); err != nil {
			return err
		}
	}
}
