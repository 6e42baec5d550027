// A DNS client that is not amesh's own: Go's pure resolver (net.Resolver with PreferGo) pointed at one server.
//
//	dns_go SERVER udp|tcp ip4|ip6|cname|txt NAME
//
// With "udp" the resolver speaks as it does to any nameserver: UDP, and TCP again when an answer comes back
// truncated. With "tcp" every query goes over TCP. Prints one JSON line: the values found, or Go's error and
// whether Go took it as "not found".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"time"
)

type result struct {
	Values   []string `json:"values"`
	Error    string   `json:"error,omitempty"`
	NotFound bool     `json:"notFound"`
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: dns_go SERVER udp|tcp ip4|ip6|cname|txt NAME")
		os.Exit(2)
	}
	server, transport, kind, name := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	r := &net.Resolver{
		PreferGo:     true,
		StrictErrors: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			if transport == "tcp" {
				network = "tcp"
			}
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out result
	var err error
	switch kind {
	case "ip4", "ip6":
		var ips []net.IP
		ips, err = r.LookupIP(ctx, kind, name)
		for _, ip := range ips {
			out.Values = append(out.Values, ip.String())
		}
	case "cname":
		var c string
		c, err = r.LookupCNAME(ctx, name)
		if err == nil {
			out.Values = []string{c}
		}
	case "txt":
		out.Values, err = r.LookupTXT(ctx, name)
	default:
		fmt.Fprintln(os.Stderr, "unknown kind", kind)
		os.Exit(2)
	}
	if err != nil {
		out.Error = err.Error()
		var de *net.DNSError
		out.NotFound = errors.As(err, &de) && de.IsNotFound
	}
	sort.Strings(out.Values)
	if out.Values == nil {
		out.Values = []string{}
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
