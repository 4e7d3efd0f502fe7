package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/measure"
)

// TestOpenRateAndCorrection runs the open model against a server that
// answers at once except for one long stall, and checks the two things
// the model exists for: the number of requests follows the rate, not the
// server, and the requests the stall delayed are charged for it.
func TestOpenRateAndCorrection(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("n") == "10" {
			<-release // the 11th request stalls until the test lets it go
		}
	}))
	defer srv.Close()
	c, err := httpc.NewHTTPClient(httpc.HTTPOptions{Target: srv.URL, Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const rate, dur = 200, time.Second
	o := Open{Senders: 1, Rate: rate, Duration: dur, Seed: 1}
	run, err := o.Run(context.Background(), func(ctx context.Context, vu *VU) (Request, error) {
		ep := c.Endpoint(ctx, http.MethodGet, "/")
		return func(ctx context.Context, vu *VU) measure.Outcome {
			if vu.N == 10 {
				// Stall for a fifth of the run: 40 requests fall due meanwhile.
				time.AfterFunc(dur/5, func() { once.Do(func() { close(release) }) })
			}
			uri := []byte("/?n=" + strconv.FormatInt(vu.N, 10))
			if _, _, err := ep.SendURI(http.MethodGet, uri, nil); err != nil {
				return measure.Outcome{Failure: httpc.ErrorKey(err)}
			}
			return measure.Outcome{}
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Stats.Requests() + run.Unsent; got != rate*int64(dur/time.Second) {
		t.Errorf("%d requests sent and %d unsent, want %d due", run.Stats.Requests(), run.Unsent, rate)
	}
	// Each of the ~40 requests due during the stall waited for it: the
	// slowest waited about the stall, and about 20% of all waited longer
	// than a tenth of it. A closed loop would report one slow request.
	if slow := run.Stats.Quantile(0.85); slow < dur/50 {
		t.Errorf("p85 latency %v: the requests delayed by the stall were not charged for it", slow)
	}
	if run.Stats.Max() < dur/5 {
		t.Errorf("max latency %v, want at least the stall of %v", run.Stats.Max(), dur/5)
	}
}
