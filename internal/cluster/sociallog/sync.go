package sociallog

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sync returns once the node has applied every record appended before the
// call. It asks the partition's leader for the log's end, then waits for
// the node's apply to reach it. Concurrent calls share the leader's
// answers: a call waits for the first request sent after it began, so
// one request serves every call that arrived while the previous one was
// out.
func (l *Log) Sync(ctx context.Context) error {
	end, err := l.ends.get(ctx)
	if err != nil {
		return err
	}
	return l.wait(ctx, end)
}

// endReader reads the log's end offset for Sync, one request at a time.
type endReader struct {
	cl    *kgo.Client
	topic string

	mu      sync.Mutex
	running bool
	next    *endRead // the read to send once the running one returns
}

// endRead is one request for the end offset and its answer.
type endRead struct {
	done chan struct{}
	end  int64
	err  error
}

func (e *endReader) get(ctx context.Context) (int64, error) {
	e.mu.Lock()
	if e.next == nil {
		e.next = &endRead{done: make(chan struct{})}
	}
	r := e.next
	if !e.running {
		e.running, e.next = true, nil
		go e.run(r)
	}
	e.mu.Unlock()
	select {
	case <-r.done:
		return r.end, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run answers r, then the reads asked for meanwhile, until none is left.
func (e *endReader) run(r *endRead) {
	for r != nil {
		r.end, r.err = e.read()
		close(r.done)
		e.mu.Lock()
		r, e.next = e.next, nil
		e.running = r != nil
		e.mu.Unlock()
	}
}

// read asks the partition's leader for the log's end (its high
// watermark; the log has no transactions).
func (e *endReader) read() (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = e.topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = 0
	p.Timestamp = -1 // the end
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, e.cl)
	if err != nil {
		return 0, fmt.Errorf("sociallog: end of %s: %w", e.topic, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("sociallog: end of %s: no answer for its partition", e.topic)
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return 0, fmt.Errorf("sociallog: end of %s: %w", e.topic, err)
	}
	return rp.Offset, nil
}
