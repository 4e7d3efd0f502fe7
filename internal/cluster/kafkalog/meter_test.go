package kafkalog

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A node's Meter counts each client's requests by kind, and the rounds
// that read commands with the commands they read.
func TestMeterCountsRequestsAndRounds(t *testing.T) {
	ctx, c := newCluster(t, 1)
	c.Meter = NewMeter(prometheus.NewRegistry())
	p, err := NewProducer(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 3 {
		if _, err := p.Append(ctx, 0, fmt.Appendf(nil, "cmd-%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	a := joinChain(t, c, "a")
	read := 0
	for read < 3 {
		res, err := a.round(ctx, ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.Meter.ChainRound(res)
		read += res.Commands
	}
	requests := func(client, kind string) float64 {
		return testutil.ToFloat64(c.Meter.requests.WithLabelValues(client, kind))
	}
	if n := requests("producer", "Produce"); n < 1 {
		t.Errorf("producer's Produce requests: %v, want at least 1", n)
	}
	if n := requests("writer", "Produce"); n < 2 {
		t.Errorf("writer's Produce requests: %v, want at least 2: the take's and a round's", n)
	}
	if n := requests("member", "Fetch"); n < 1 {
		t.Errorf("member's Fetch requests: %v, want at least 1", n)
	}
	rounds := testutil.ToFloat64(c.Meter.rounds.WithLabelValues("committed"))
	if n := testutil.ToFloat64(c.Meter.commands); n != 3 || rounds < 1 || rounds > 3 {
		t.Errorf("%v rounds committed reading %v commands, want 1 to 3 reading 3", rounds, n)
	}
}
