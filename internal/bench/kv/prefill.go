package kv

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// prefillKV PUTs keys 0 … cfg.Prefill-1 through the public API, as a
// client would, with cfg.PrefillConns connections each sending its next
// PUT as soon as the last was answered: many writers in flight share the
// server's fsyncs, which is what makes 1.3 million durable PUTs take
// seconds rather than minutes. It prints its progress once a second and
// stops at the first failure.
func prefillKV(ctx context.Context, client *httpc.HTTPClient, cfg KVConfig, progress *report.Progress) error {
	progress.Printf("kv: prefilling %s keys of %d bytes over %d connections", units.Thousands(int64(cfg.Prefill)), cfg.ValueSize, cfg.PrefillConns)
	values := randomBytes(cfg.Seed^0x9e37, 2*cfg.ValueSize+1)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for w := range cfg.PrefillConns {
		wg.Go(func() {
			ep := client.Endpoint(ctx, http.MethodPut, "/v0/entity")
			defer ep.Close()
			var uri []byte
			for i := next.Add(1) - 1; i < int64(cfg.Prefill) && ctx.Err() == nil; i = next.Add(1) - 1 {
				uri = appendKVKey(append(uri[:0], "/v0/entity?id="...), int(i))
				off := int(uint64(i)*2654435761+uint64(w)) % (len(values) - cfg.ValueSize)
				status, reply, err := ep.SendURI(http.MethodPut, uri, values[off:off+cfg.ValueSize])
				if err == nil && status != http.StatusCreated {
					err = fmt.Errorf("answered %d %s", status, httpc.ProblemDetail(reply))
				}
				if err != nil {
					cancel(fmt.Errorf("bench: prefill: PUT %s: %w", uri, err))
					return
				}
				done.Add(1)
			}
		})
	}
	stop := make(chan struct{})
	go reportPrefill(progress, &done, cfg.Prefill, began, stop)
	wg.Wait()
	close(stop)
	if err := context.Cause(ctx); err != nil {
		return err
	}
	progress.Printf("kv: prefilled %s keys in %s (%s/s)", units.Thousands(done.Load()), units.K6Duration(time.Since(began)),
		units.Rate(measure.PerSecond(done.Load(), time.Since(began).Seconds())))
	return nil
}

// reportPrefill prints the prefill's progress every second until stop.
func reportPrefill(progress *report.Progress, done *atomic.Int64, total int, began time.Time, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			progress.Done()
			return
		case <-tick.C:
			n := done.Load()
			progress.Line(fmt.Sprintf("prefill: %s / %s keys, %s/s", units.Thousands(n), units.Thousands(int64(total)),
				units.Rate(measure.PerSecond(n, time.Since(began).Seconds()))))
		}
	}
}
