package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SLOTerm is one bound of a service level objective: the latency at a
// quantile must not exceed Max.
type SLOTerm struct {
	Name     string  // as written, such as "p99"
	Quantile float64 // 0..1
	Max      time.Duration
}

// ParseSLO reads an objective such as "p99=1ms" or "p99=1ms,p99.9=5ms".
func ParseSLO(s string) ([]SLOTerm, error) {
	var terms []SLOTerm
	for part := range strings.SplitSeq(s, ",") {
		name, limit, ok := strings.Cut(strings.TrimSpace(part), "=")
		q, err := strconv.ParseFloat(strings.TrimPrefix(name, "p"), 64)
		if !ok || !strings.HasPrefix(name, "p") || err != nil || q <= 0 || q > 100 {
			return nil, fmt.Errorf("bench: --slo %q: want terms like p99=1ms, comma-separated", s)
		}
		d, err := time.ParseDuration(limit)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("bench: --slo %q: %q is not a positive duration", s, limit)
		}
		terms = append(terms, SLOTerm{Name: name, Quantile: q / 100, Max: d})
	}
	return terms, nil
}
