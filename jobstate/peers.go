package jobstate

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParsePeers parses a member list "a=127.0.0.1:7001,b=10.0.0.2:7001,..."
// into id -> host:port. Spaces around items, ids and addresses are
// ignored. Ids and addresses must be unique; errors are one line and name
// the bad item.
func ParsePeers(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("jobstate: peers: empty list")
	}
	peers := map[string]string{}
	byAddr := map[string]string{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("jobstate: peers: item %d is empty", i+1)
		}
		id, addr, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("jobstate: peers: item %q: want id=host:port", item)
		}
		id, addr = strings.TrimSpace(id), strings.TrimSpace(addr)
		if id == "" {
			return nil, fmt.Errorf("jobstate: peers: item %q: empty id", item)
		}
		if err := checkAddr(addr); err != nil {
			return nil, fmt.Errorf("jobstate: peers: item %q: %w", item, err)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("jobstate: peers: item %q: id %q given twice", item, id)
		}
		if other, dup := byAddr[addr]; dup {
			return nil, fmt.Errorf("jobstate: peers: item %q: address %s already used by %q", item, addr, other)
		}
		peers[id] = addr
		byAddr[addr] = id
	}
	return peers, nil
}

// checkAddr reports whether addr is a host:port with a non-empty host and
// a port in 1..65535.
func checkAddr(addr string) error { return checkHostPort(addr, false) }

// checkHostPort is checkAddr, allowing an empty host (listen on every
// interface) when emptyHost is set.
func checkHostPort(addr string, emptyHost bool) error {
	if addr == "" {
		return fmt.Errorf("empty address")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return fmt.Errorf("address %q: %s", addr, ae.Err)
		}
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "" && !emptyHost {
		return fmt.Errorf("address %q: empty host", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("address %q: port %q is not in 1..65535", addr, port)
	}
	return nil
}
