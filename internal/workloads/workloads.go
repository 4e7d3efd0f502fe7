// Package workloads opens the engine with the workloads that run on it,
// the ledger and ticketing, in the order they need: the engine, each
// workload loading its state from storage, the rounds, then each
// workload's start-up writes (the ledger's @world, ticketing's interrupted
// payments).
package workloads

import (
	"context"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// Config sets up the engine and its workloads.
type Config struct {
	// Engine is the engine's configuration; its Registerer and Logger
	// serve the workloads too.
	Engine engine.Config
	// Currency is the currency of @world when the ledger is first created.
	Currency string
	// SweepEntries is the ledger's Config.SweepEntries.
	SweepEntries int
	// Tickets is ticketing's configuration; its Registerer and Logger are
	// the engine's.
	Tickets ticketengine.Config
}

// Set is the engine and the workloads that run on it.
type Set struct {
	Engine  *engine.Engine
	Ledger  *ledgerengine.Ledger
	Tickets *ticketengine.Tickets
}

// Open opens the engine and its workloads, and starts them.
func Open(ctx context.Context, cfg Config) (*Set, error) {
	eng, err := engine.Open(cfg.Engine)
	if err != nil {
		return nil, err
	}
	s := &Set{Engine: eng}
	if err := s.open(ctx, cfg); err != nil {
		if s.Ledger != nil {
			s.Ledger.Close()
		}
		eng.Close()
		return nil, err
	}
	return s, nil
}

func (s *Set) open(ctx context.Context, cfg Config) error {
	var err error
	s.Ledger, err = ledgerengine.Open(s.Engine, ledgerengine.Config{DefaultCurrency: cfg.Currency, SweepEntries: cfg.SweepEntries, Logger: cfg.Engine.Logger})
	if err != nil {
		return err
	}
	tickets := cfg.Tickets
	tickets.Registerer, tickets.Logger = cfg.Engine.Registerer, cfg.Engine.Logger
	s.Tickets, err = ticketengine.Open(s.Engine, s.Ledger, tickets)
	if err != nil {
		return err
	}
	s.Engine.Start()
	if err := s.Ledger.Start(ctx); err != nil {
		return err
	}
	return s.Tickets.Start(ctx)
}

// Close stops the engine once its logs are drained, and closes its store.
func (s *Set) Close() error {
	s.Ledger.Close()
	return s.Engine.Close()
}
