package kafkalog

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Meter counts the requests a node's clients write to the brokers, by
// client and by kind (Produce, Fetch, Heartbeat...), and the member's rounds
// and the commands they read. The brokers' CPU goes per request far more
// than per byte, and a round costs a fixed set of requests, so these
// counts, per operation served, say what the cluster costs them.
type Meter struct {
	requests *prometheus.CounterVec
	rounds   *prometheus.CounterVec
	commands prometheus.Counter
}

// NewMeter registers the counters of a node's requests and rounds with
// reg.
func NewMeter(reg prometheus.Registerer) *Meter {
	m := &Meter{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "surge_cluster_kafka_requests_total",
			Help: "Requests this node's Kafka clients wrote to the brokers, by client (producer: commands and forwards appended; writer: the rounds' and takes' changelog writes; member: the group consumer; replies: replies written; inbox: replies read; nodes: the nodes topic; other) and by request kind.",
		}, []string{"client", "kind"}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "surge_cluster_rounds_total",
			Help: "Rounds of this node's member that read commands, by outcome: committed (every partition's write counted), or not_committed (a partition's write fenced, unknown or failed).",
		}, []string{"outcome"}),
		commands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "surge_cluster_round_commands_total",
			Help: "Commands read by this node's rounds, committed or not.",
		}),
	}
	reg.MustRegister(m.requests, m.rounds, m.commands)
	return m
}

// clientHook is a Meter's hook on one client. Each kind's counter is
// resolved on its first request, so that only the kinds a client sends
// are exported.
type clientHook struct {
	m      *Meter
	client string
	byKey  [kmsg.MaxKey + 1]atomic.Pointer[prometheus.Counter]
}

// hook returns the hook that counts client's requests.
func (m *Meter) hook(client string) kgo.Hook {
	return &clientHook{m: m, client: client}
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (h *clientHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil || key < 0 || int(key) >= len(h.byKey) {
		return
	}
	c := h.byKey[key].Load()
	if c == nil {
		counter := h.m.requests.WithLabelValues(h.client, kmsg.NameForKey(key))
		c = &counter
		h.byKey[key].Store(c)
	}
	(*c).Inc()
}

// ChainRound counts a ChainMember's round that read commands: committed
// if every partition's write counted, else not; a nil Meter counts
// nothing.
func (m *Meter) ChainRound(res ChainRound) {
	if m == nil || res.Commands == 0 {
		return
	}
	outcome := "committed"
	if !res.Counted() {
		outcome = "not_committed"
	}
	m.rounds.WithLabelValues(outcome).Inc()
	m.commands.Add(float64(res.Commands))
}
