// Command hbone_go is an independent peer for amesh's interop tests, built only from Go's standard library:
// crypto/x509 path building (which matches issuer and subject names as raw DER, as webpki does), crypto/tls and
// net/http's HTTP/2 (CONNECT over h2, as HBONE uses it).
//
//	hbone_go verify ROOTS CHAIN               verify CHAIN's first certificate for client and server auth
//	hbone_go tlsdial ADDR NAME ROOTS          TLS 1.3 handshake with ADDR, verifying its certificate for DNS NAME
//	hbone_go client ADDR AUTHORITY PAYLOAD CERT KEY ROOTS EXPECTED_URI LOCAL_IP
//	                                          HBONE CONNECT to AUTHORITY through ADDR, send PAYLOAD, print the echo
//	hbone_go server ADDR CERT KEY ROOTS       HBONE server that echoes each CONNECT stream; prints one JSON line a request
//
// Results are JSON on stdout; failures exit 1 with the reason on stderr.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: hbone_go verify|tlsdial|client|server ..."))
	}
	var err error
	switch a := os.Args[2:]; os.Args[1] {
	case "verify":
		err = verify(a[0], a[1])
	case "tlsdial":
		err = tlsDial(a[0], a[1], a[2])
	case "client":
		err = client(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7])
	case "server":
		err = server(a[0], a[1], a[2], a[3])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func readCerts(file string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return certs, nil
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		certs = append(certs, c)
	}
}

func pool(certs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

func uris(c *x509.Certificate) []string {
	var out []string
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	return out
}

// verifyChain verifies chain[0] to roots through chain[1:] for usage and returns the verified path's subjects.
func verifyChain(chain []*x509.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage) ([]string, error) {
	if len(chain) == 0 {
		return nil, errors.New("no certificate")
	}
	paths, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: pool(chain[1:]), KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		return nil, err
	}
	var subjects []string
	for _, c := range paths[0] {
		subjects = append(subjects, c.Subject.String())
	}
	return subjects, nil
}

func verify(rootsFile, chainFile string) error {
	roots, err := readCerts(rootsFile)
	if err != nil {
		return err
	}
	chain, err := readCerts(chainFile)
	if err != nil {
		return err
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
		if _, err := verifyChain(chain, pool(roots), u); err != nil {
			return err
		}
	}
	path, _ := verifyChain(chain, pool(roots), x509.ExtKeyUsageServerAuth)
	emit(map[string]any{"uris": uris(chain[0]), "path": path})
	return nil
}

func tlsDial(addr, name, rootsFile string) error {
	roots, err := readCerts(rootsFile)
	if err != nil {
		return err
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool(roots), ServerName: name, MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}})
	if err != nil {
		return err
	}
	defer conn.Close()
	emit(map[string]any{"verified": len(conn.ConnectionState().VerifiedChains) > 0, "alpn": conn.ConnectionState().NegotiatedProtocol})
	return nil
}

// hboneTLS is HBONE's TLS: 1.3 only, ALPN h2, our certificate chain, and the peer verified against the roots.
func hboneTLS(certFile, keyFile, rootsFile string) (*tls.Config, error) {
	roots, err := readCerts(rootsFile)
	if err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}, RootCAs: pool(roots), ClientCAs: pool(roots)}, nil
}

func client(addr, authority, payload, certFile, keyFile, rootsFile, expected, localIP string) error {
	cfg, err := hboneTLS(certFile, keyFile, rootsFile)
	if err != nil {
		return err
	}
	// A SPIFFE server certificate has no DNS name: verify the chain ourselves, then the URI SAN.
	cfg.InsecureSkipVerify = true
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		var chain []*x509.Certificate
		for _, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return err
			}
			chain = append(chain, c)
		}
		if _, err := verifyChain(chain, cfg.RootCAs, x509.ExtKeyUsageServerAuth); err != nil {
			return err
		}
		if got := uris(chain[0]); len(got) != 1 || got[0] != expected {
			return fmt.Errorf("server identity %v is not %s", got, expected)
		}
		return nil
	}
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}, Timeout: 5 * time.Second}
	tr := &http.Transport{
		TLSClientConfig:   cfg,
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, a)
		},
	}
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodConnect, "https://"+addr, pr)
	if err != nil {
		return err
	}
	req.Host = authority
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	echoed := ""
	if resp.StatusCode == http.StatusOK {
		go func() {
			_, _ = io.WriteString(pw, payload)
			_ = pw.Close()
		}()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		echoed = string(b)
	} else {
		_ = pw.Close()
	}
	emit(map[string]any{"proto": resp.Proto, "status": resp.StatusCode, "echoed": echoed})
	return nil
}

func server(addr, certFile, keyFile, rootsFile string) error {
	cfg, err := hboneTLS(certFile, keyFile, rootsFile)
	if err != nil {
		return err
	}
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var peer []string
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			peer = uris(r.TLS.PeerCertificates[0])
		}
		emit(map[string]any{"method": r.Method, "authority": r.Host, "proto": r.Proto, "peer": peer})
		if r.Method != http.MethodConnect || r.ProtoMajor != 2 {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		f.Flush()
		buf := make([]byte, 32*1024)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				f.Flush()
			}
			if err != nil {
				return
			}
		}
	})
	srv := &http.Server{Handler: handler, TLSConfig: cfg, ErrorLog: nil}
	fmt.Println("listening " + strings.TrimSpace(ln.Addr().String()))
	return srv.ServeTLS(ln, "", "")
}
