package calls

import (
	"testing"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A forward's or an answer's value travels as a command does: its first
// byte must name no workload, or a node would hand it to one.
func TestForwardTagsNameNoWorkload(t *testing.T) {
	for _, w := range []byte{WorkloadLedger, WorkloadKV, WorkloadTickets, WorkloadPayment} {
		if w == kafkalog.ForwardTag || w == kafkalog.AnswerTag {
			t.Fatalf("workload byte %q is a forward's or an answer's tag", w)
		}
	}
}
