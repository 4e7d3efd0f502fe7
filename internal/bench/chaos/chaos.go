// Package chaos is `surge bench chaos`: it starts the real surge binary on a
// data directory, drives a mixed load at it (transfers within and across
// shards, atomic batches, two-phase transfers, seat reservations paid
// through the ledger, key-value writes), kills it with SIGKILL at a random
// moment, optionally damages the stopped data directory, restarts it and
// audits every acknowledged write, in cycles. It prints a Jepsen-style
// table and fails on any loss or anomaly.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Config sets up a run.
type Config struct {
	// Binary is the surge executable to start; empty: this one.
	Binary string
	// Dir is the data directory; empty: a new temporary one, removed after.
	Dir string
	// Kills is how many times the server is killed (SIGKILL).
	Kills int
	// Workers is how many clients drive the load at once.
	Workers int
	// MinOps and MaxOps bound how many operations are acknowledged before
	// each kill; the kill lands at a random count between them.
	MinOps, MaxOps int
	// Flip damages the stopped data directory after every kill: one byte
	// of the ledger's newest WAL, in its first half, then one byte of a
	// random table file. The server must refuse to start naming the WAL
	// damage, and refuse to start or answer /readyz 503 naming the
	// damaged table; each byte is then restored and the audit must find
	// nothing lost.
	Flip bool
	// FillMiB, if set, puts the data directory on a tmpfs of that many
	// MiB, mounted for the run (which needs root), and fills it once per
	// cycle, halfway to the kill: surge must refuse writes, say so on
	// /readyz and resume by itself once the disk is freed (fill.go).
	FillMiB int
	// Seed makes the kill points and the load repeatable (0: random).
	Seed uint64
	// Log receives progress lines; nil: none.
	Log io.Writer
}

// DefaultConfig is a short run.
func DefaultConfig() Config {
	return Config{Kills: 5, Workers: 8, MinOps: 200, MaxOps: 2000}
}

// Run runs the cycles and writes the table to out. Its error says why the
// run failed: a loss or anomaly found, or the server not starting.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Binary = exe
	}
	r := &run{cfg: cfg, hist: newHistory(), rep: newReport()}
	if cfg.FillMiB > 0 {
		if cfg.Dir != "" {
			return nil, errors.New("chaos: a run that fills the disk mounts its own; leave the data directory unset")
		}
		mnt, err := mountDisk(cfg.FillMiB)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := unmountDisk(mnt); err != nil {
				fmt.Fprintln(cfg.Log, err)
			}
		}()
		r.mnt, cfg.Dir = mnt, filepath.Join(mnt, "data")
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "surge-chaos-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	fmt.Fprintf(cfg.Log, "chaos: %d kills, %d workers, data in %s, seed %d\n", cfg.Kills, cfg.Workers, cfg.Dir, cfg.Seed)
	r.cfg, r.rng = cfg, rand.New(rand.NewPCG(cfg.Seed, 1))
	err := r.cycles(ctx)
	r.rep.write(out)
	if err == nil {
		err = r.rep.verdict()
	}
	return r.rep, err
}

type run struct {
	cfg  Config
	rng  *rand.Rand
	hist *history
	rep  *Report
	srv  *server
	mnt  string // the tmpfs under the data directory, with FillMiB
}

func (r *run) cycles(ctx context.Context) error {
	srv, err := startServer(ctx, r.cfg.Binary, r.cfg.Dir, r.cfg.Log, r.serveFlags()...)
	if err != nil {
		return err
	}
	r.srv = srv
	defer func() { r.srv.kill() }()
	c := newClient(srv.url)
	if err := setup(ctx, c); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	for cycle := range r.cfg.Kills {
		killAt := r.cfg.MinOps + r.rng.IntN(r.cfg.MaxOps-r.cfg.MinOps+1)
		r.load(ctx, c, cycle, killAt)
		fmt.Fprintf(r.cfg.Log, "chaos: cycle %d: killed after %d acknowledged operations\n", cycle+1, killAt)
		if r.cfg.Flip {
			if err := r.flipCycle(ctx); err != nil {
				return err
			}
			if err := r.tableFlipCycle(ctx); err != nil {
				return err
			}
		}
		if r.srv, err = startServer(ctx, r.cfg.Binary, r.cfg.Dir, r.cfg.Log, r.serveFlags()...); err != nil {
			return fmt.Errorf("restart after kill %d: %w", cycle+1, err)
		}
		c = newClient(r.srv.url)
		r.rep.restarts = append(r.rep.restarts, r.srv.readyAfter)
		if err := audit(ctx, c, r.hist, r.rep); err != nil {
			return fmt.Errorf("audit after kill %d: %w", cycle+1, err)
		}
	}
	return nil
}

// serveFlags are the run's flags for surge serve: on a disk to fill, small
// memtables, so that the server writes table files often and meets the
// full disk within a few operations (its WAL files are recycled, and a
// recycled file's space is already taken).
func (r *run) serveFlags() []string {
	if r.mnt == "" {
		return nil
	}
	return []string{"--memtable-mb", "1"}
}

// load drives the workers until killAt operations were acknowledged, then
// kills the server while they are in flight, and waits for them to stop.
// With FillMiB it fills the disk halfway.
func (r *run) load(ctx context.Context, c *client, cycle, killAt int) {
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	acks := make(chan struct{}, 1024)
	for w := range r.cfg.Workers {
		wk := &worker{id: w, cycle: cycle, c: c, h: r.hist, rng: rand.New(rand.NewPCG(r.cfg.Seed, uint64(cycle*1000+w+2))), acked: acks}
		wg.Go(func() { wk.loop(lctx) })
	}
	// fill, with FillMiB, reports the end of the cycle's disk fill, which
	// runs while the workers do; the kill waits for it.
	var fill chan bool
	filling := false
	for n := 0; n < killAt || filling; {
		if r.mnt != "" && fill == nil && n >= killAt/2 {
			fill, filling = make(chan bool, 1), true
			go func() { fill <- r.fillCycle(ctx) }()
		}
		select {
		case <-acks:
			n++
		case resumed := <-fill:
			filling = false
			if !resumed {
				n = killAt
			}
		case <-ctx.Done():
			n = killAt
		}
	}
	r.srv.kill()
	stop()
	go func() {
		for range acks { //nolint:revive // drain until the workers stop
		}
	}()
	wg.Wait()
	close(acks)
}

// flipCycle flips a byte of the stopped ledger's newest WAL, checks that
// the server refuses to start naming it, and restores the byte.
func (r *run) flipCycle(ctx context.Context) error {
	wal, at, undo, err := flipWAL(filepath.Clean(r.cfg.Dir), r.rng)
	if err != nil {
		return err
	}
	if wal == "" {
		return nil // nothing in the WAL yet
	}
	refused, output := refusesToStart(ctx, r.cfg.Binary, r.cfg.Dir)
	r.rep.flips++
	if refused {
		r.rep.flipsDetected++
	} else {
		fmt.Fprintf(r.cfg.Log, "chaos: a byte flipped at %d of %s was not detected:\n%s\n", at, wal, output)
	}
	return undo()
}

var errNotReady = errors.New("chaos: server not ready")

// readyTimeout bounds a start; a healthy one is far quicker.
const readyTimeout = 2 * time.Minute
