package httpc

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
)

// SplitTargets splits a list of comma-separated base URLs, dropping
// blanks.
func SplitTargets(list string) []string {
	var out []string
	for t := range strings.SplitSeq(list, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// HTTPClient sends a load generator's requests to one target or several
// (the nodes of a cluster): each Endpoint goes to the next target in turn,
// so the VUs spread evenly over them, and the connections with them.
type HTTPClient struct {
	targets []*targetClient
	next    atomic.Uint32
}

// NewHTTPClient returns a client for o.Target, each of its targets with
// its share of o.Conns.
func NewHTTPClient(o HTTPOptions) (*HTTPClient, error) {
	urls := SplitTargets(o.Target)
	if len(urls) == 0 {
		return nil, errors.New("bench: no target")
	}
	per := (max(o.Conns, 1) + len(urls) - 1) / len(urls)
	c := &HTTPClient{}
	for _, u := range urls {
		to := o
		to.Conns = per
		tc, err := newTargetClient(to, u)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.targets = append(c.targets, tc)
	}
	return c, nil
}

// Split returns a client for each target alone, sharing this client's
// connections: to ask each target something, such as whether it is ready.
func (c *HTTPClient) Split() []*HTTPClient {
	out := make([]*HTTPClient, len(c.targets))
	for i, t := range c.targets {
		out[i] = &HTTPClient{targets: []*targetClient{t}}
	}
	return out
}

// Target returns the base URLs requests go to, comma-separated.
func (c *HTTPClient) Target() string {
	urls := make([]string, len(c.targets))
	for i, t := range c.targets {
		urls[i] = t.Target()
	}
	return strings.Join(urls, ",")
}

// Endpoint returns a handle that sends method requests to path on the
// next target. An Endpoint reuses its body and reply buffers, so each VU
// needs its own.
//
// ctx bounds every request of the Endpoint: when it ends, the request in
// flight fails at once. path may end in a query ("?wait=10s").
func (c *HTTPClient) Endpoint(ctx context.Context, method, path string) *Endpoint {
	i := int(c.next.Add(1)-1) % len(c.targets)
	return c.targets[i].Endpoint(ctx, method, path)
}

// BytesSent is the number of bytes written to the targets so far.
func (c *HTTPClient) BytesSent() int64 {
	var n int64
	for _, t := range c.targets {
		n += t.BytesSent()
	}
	return n
}

// BytesReceived is the number of bytes read from the targets so far.
func (c *HTTPClient) BytesReceived() int64 {
	var n int64
	for _, t := range c.targets {
		n += t.BytesReceived()
	}
	return n
}

// Close closes the connections: with StdClient the idle ones, with
// FastClient all of them (an Endpoint still sending fails).
func (c *HTTPClient) Close() {
	for _, t := range c.targets {
		t.Close()
	}
}

// H2Events is what the targets did to the connections so far, or nil
// unless the client speaks HTTP/2 (H2CClient, H2FastClient).
func (c *HTTPClient) H2Events() *H2Events {
	var sum *H2Events
	for _, t := range c.targets {
		e := t.H2Events()
		if e == nil {
			return nil
		}
		if sum == nil {
			sum = e
			continue
		}
		sum.Dials += e.Dials
		addCounts(sum.GoAways, e.GoAways)
		addCounts(sum.Resets, e.Resets)
		addCounts(sum.ConnErrors, e.ConnErrors)
	}
	return sum
}

func addCounts(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}
