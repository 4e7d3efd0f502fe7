package kafkalog

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Check looks for what other writers appended to the owned partitions
// since the owner's last write there, for an owner that writes none for a
// while: a zombie's records must be repaired before min.compaction.lag.ms
// runs out, and a claim means the partition is another owner's. It asks
// the brokers for the partitions' ends, one request; for each whose end
// moved it writes a trailer alone, which judges the records between as a
// round's write does, then writes the repairs that write found. It returns
// the outcomes of those writes, none if no end moved. The node's rounds
// call it at least once a fraction of the lag, as they call Round.
func (o *Owner) Check(ctx context.Context) ([]Outcome, error) {
	moved, err := o.w.moved(ctx)
	if err != nil {
		return nil, err
	}
	if len(moved) == 0 {
		return nil, nil
	}
	out, unsent, err := o.round(ctx, nil, moved)
	if out = append(out, unsent...); err != nil || len(out) == 0 {
		return nil, err
	}
	if !slices.ContainsFunc(out, func(oc Outcome) bool { return len(oc.Written.ForeignKeys) > 0 }) {
		return out, nil
	}
	repaired, err := o.Round(ctx, nil)
	if err != nil {
		return out, err
	}
	return append(out, repaired...), nil
}

// moved lists, in order, the partitions the writer writes whose log ends
// past its last record there.
func (w *Writer) moved(ctx context.Context) ([]int32, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.owned) == 0 {
		return nil, nil
	}
	ends, err := kadm.NewClient(w.cl).ListEndOffsets(ctx, w.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafkalog: ends of %s: %w", w.topic, err)
	}
	var moved []int32
	for p, o := range w.owned {
		if end, ok := ends.Lookup(w.topic, p); ok && end.Offset > o.end {
			moved = append(moved, p)
		}
	}
	slices.Sort(moved)
	return moved, nil
}
