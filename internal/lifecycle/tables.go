package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/store"
)

// NamedStore is a store with the name the log and /readyz give it.
type NamedStore struct {
	Name  string
	Store *store.Store
}

// CheckTables checks every table file of stores once (store.VerifyTables),
// in the background from the moment the server is ready; it returns the
// function that stops the check and waits for it, to call before the
// stores close. A damaged file is logged, naming it, its store's
// surge_storage_damaged series set to 1, and unready is told: /readyz
// answers 503 from then on. Reads that need the damaged blocks fail; the
// rest are served.
func CheckTables(ctx context.Context, log *slog.Logger, stores []NamedStore, unready func(reason string), reg prometheus.Registerer) (stop func()) {
	damaged := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "surge_storage_damaged",
		Help: "1 once a table file of the store failed its checksums (the log names it): restore the data directory from a copy.",
	}, []string{"store"})
	for _, ns := range stores {
		damaged.WithLabelValues(ns.Name).Set(0)
	}
	reg.MustRegister(damaged)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, ns := range stores {
			began := time.Now()
			err := ns.Store.VerifyTables(ctx)
			var damage *store.TableDamage
			switch {
			case errors.As(err, &damage):
				log.Error("storage damaged: a table file fails its checksums; reads that need it fail, the rest are served; restore the data directory from a copy",
					"store", ns.Name, "file", damage.Path, "err", damage.Err)
				damaged.WithLabelValues(ns.Name).Set(1)
				unready(fmt.Sprintf("%s storage damaged: table file %s fails its checksums", ns.Name, damage.Path))
			case err != nil && ctx.Err() == nil:
				log.Warn("table files not checked", "store", ns.Name, "err", err)
			case err == nil:
				log.Info("table files checked", "store", ns.Name, "elapsed", time.Since(began).Round(time.Millisecond))
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
