package cli

import (
	"log/slog"
	"runtime"
	"testing"

	"github.com/spf13/pflag"

	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/kv/kvstore"
)

// In cluster mode a value travels in one Kafka record: the default limit
// is lowered to what a record carries, a smaller one kept, and a larger
// one set by hand refused before the node starts.
func TestClusterKVValueFitsARecord(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		limit, want int
		fails       bool
	}{
		{limit: 4096, want: 4096},
		{limit: kvstore.MaxClusterValueBytes, want: kvstore.MaxClusterValueBytes},
		{limit: kv.DefaultMaxValueBytes, want: kvstore.MaxClusterValueBytes},
		{limit: kvstore.MaxClusterValueBytes + 1, fails: true},
		{limit: kv.MaxValueLimit, fails: true},
	} {
		got, err := clusterKVValue(c.limit, log)
		if (err != nil) != c.fails || got != c.want {
			t.Errorf("--kv-max-value %d in cluster mode: %d, %v; want %d (fails %v)", c.limit, got, err, c.want, c.fails)
		}
	}
}

// In cluster mode a request holds its place through a Kafka round trip:
// the default bound on requests in progress is the cluster's, a bound
// given by hand (the single process's default and none included) is
// kept.
func TestClusterMaxRequestsDefault(t *testing.T) {
	cluster := clusterRequestsPerCPU * int64(runtime.GOMAXPROCS(0))
	if cluster <= front.DefaultLimits.MaxRequests {
		t.Fatalf("cluster default %d is not above the single process's %d", cluster, front.DefaultLimits.MaxRequests)
	}
	for _, c := range []struct {
		limit int64
		given bool
		want  int64
	}{
		{front.DefaultLimits.MaxRequests, false, cluster},
		{front.DefaultLimits.MaxRequests, true, front.DefaultLimits.MaxRequests},
		{16, true, 16},
		{-1, true, -1},
	} {
		if got := clusterMaxRequests(c.limit, c.given); got != c.want {
			t.Errorf("--max-inflight-requests %d (given %v) in cluster mode: %d, want %d", c.limit, c.given, got, c.want)
		}
	}
}

// The peer links listen on the host of --addr, on a free port, unless
// --peer-addr says otherwise; --peer=false turns them off.
func TestPeerFlags(t *testing.T) {
	for _, c := range []struct {
		cfg  clusterConfig
		addr string
		want string // "" for no links
	}{
		{clusterConfig{peer: true}, "127.0.0.1:8081", "127.0.0.1:0"},
		{clusterConfig{peer: true}, ":8080", ":0"},
		{clusterConfig{peer: true, peerAddr: "10.0.0.5:7000"}, "127.0.0.1:8081", "10.0.0.5:7000"},
		{clusterConfig{peer: false}, "127.0.0.1:8081", ""},
	} {
		pc, err := c.cfg.peerConfig(c.addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if pc != nil {
			got = pc.Listen
		}
		if got != c.want {
			t.Errorf("%+v with --addr %s: listens on %q, want %q", c.cfg, c.addr, got, c.want)
		}
	}
	if _, err := (clusterConfig{peer: true}).peerConfig("no-port", nil); err == nil {
		t.Error("an --addr without a port gave a peer address")
	}
}

// A node links to its peers unless started with --peer=false.
func TestPeerLinksAreTheDefault(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--peer=false"}, false},
		{[]string{"--peer"}, true},
	} {
		f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		var cfg clusterConfig
		addClusterFlags(f, &cfg)
		if err := f.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if cfg.peer != c.want {
			t.Errorf("flags %q: peer links %v, want %v", c.args, cfg.peer, c.want)
		}
	}
}
