package cli

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/cluster/node"
)

// The series below exist for alerting (docs/alerts/surge.rules.yml):
// what /readyz and a node's partitions say, which a scrape can read.

// registerReady exports surge_ready: 1 while /readyz answers 200.
func registerReady(reg prometheus.Registerer, ready func() bool) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "surge_ready",
		Help: "1 while /readyz answers 200; 0 while recovering, refusing writes on a disk fault, with damaged tables, without a cluster node's partitions, or shutting down.",
	}, func() float64 { return boolGauge(ready()) }))
}

// registerPartitions exports a cluster node's partitions: those it owns
// and the cluster's count.
func registerPartitions(reg prometheus.Registerer, n *node.Node, partitions int) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "surge_cluster_partitions_owned",
			Help: "Partitions (shards) of the cluster this node owns; 0 on a node that serves requests only by forwarding them.",
		}, func() float64 { return float64(len(n.Owned())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "surge_cluster_partitions",
			Help: "Partitions (shards) of the cluster's topics (--partitions).",
		}, func() float64 { return float64(partitions) }),
	)
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
