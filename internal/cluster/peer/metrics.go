package peer

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics count the commands that go over the links.
type metrics struct {
	sent, fallbacks, taken prometheus.Counter
	// forwardsDropped counts the forwards and answers the node's Take
	// dropped.
	forwardsDropped prometheus.Counter
	// answers by kind, resolved once: a reply is counted per command.
	replies, viaKafka, failed, linkDown prometheus.Counter
	// refused counts the connections to the peer port over its budget.
	refused prometheus.Counter
	// messages counts the messages the node wrote on its links, each
	// carrying the entries queued since the link's previous one, by way:
	// commands (to owners) and answers (to front nodes).
	commandMsgs, answerMsgs prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "surge_cluster_peer_commands_sent_total",
			Help: "Commands the node sent to their partition's owner over a peer link.",
		}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "surge_cluster_peer_fallbacks_total",
			Help: "Commands for another node's partition that went through Kafka because its peer link was not up or was full.",
		}),
		taken: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "surge_cluster_peer_commands_taken_total",
			Help: "Commands the node took from other nodes over peer links, as their partition's owner.",
		}),
		forwardsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "surge_cluster_peer_forwards_dropped_total",
			Help: "Forwards and answers other nodes sent over peer links that the node dropped, its queue holding its bound of them or their partition not its own; their sources send them again.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "surge_cluster_peer_connections_refused_total",
			Help: "Connections to the peer port closed at once because it had its budget of open connections (256).",
		}),
	}
	answers := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "surge_cluster_peer_answers_total",
		Help: "Answers to the commands the node sent over peer links, by kind: reply (over the link), kafka (the reply comes through the inbox), failed (by the owner), link_down (the link broke first).",
	}, []string{"answer"})
	m.replies, m.viaKafka = answers.WithLabelValues("reply"), answers.WithLabelValues("kafka")
	m.failed, m.linkDown = answers.WithLabelValues("failed"), answers.WithLabelValues("link_down")
	messages := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "surge_cluster_peer_messages_total",
		Help: "Messages the node wrote on peer links, by what they carry: commands (to their owners) or answers (to the front nodes).",
	}, []string{"carrying"})
	m.commandMsgs, m.answerMsgs = messages.WithLabelValues("commands"), messages.WithLabelValues("answers")
	if reg != nil {
		reg.MustRegister(m.sent, m.fallbacks, m.taken, m.forwardsDropped, m.refused, answers, messages)
	}
	return m
}
