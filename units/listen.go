package units

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// The one rule for turning a listen address into an address to dial, and
// for telling when two listen addresses collide. The supervisor's health
// probe, the server under test (bench/target) and the folder's conflict
// check all read a unit's listen address through it.

// wildcard reports whether host, from a listen address, binds every
// interface: empty, or an unspecified address (0.0.0.0, ::).
func wildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// DialAddress is the host:port a client on this host dials to reach a
// server listening on listen: a wildcard host is dialled on loopback of its
// family (127.0.0.1, or ::1 for an IPv6 wildcard).
func DialAddress(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", listen, err)
	}
	if wildcard(host) {
		if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
			host = "::1"
		} else {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, port), nil
}

// BaseURL is the http URL a client on this host dials for a server
// listening on listen (see DialAddress).
func BaseURL(listen string) (string, error) {
	addr, err := DialAddress(listen)
	if err != nil {
		return "", err
	}
	return "http://" + addr, nil
}

// listenKey normalises host:port so "localhost:80" and "127.0.0.1:80" and
// ":80" compare sensibly: a wildcard host becomes "".
func listenKey(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "", err
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	if wildcard(host) {
		host = ""
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// listenOverlaps reports whether two normalised addresses would collide:
// the same address, or the same port where one binds every interface.
func listenOverlaps(a, b string) bool {
	if a == b {
		return true
	}
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	return pa == pb && (ha == "" || hb == "")
}
