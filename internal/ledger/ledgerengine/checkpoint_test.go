package ledgerengine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/surge-dev/surge/internal/ledger"
)

// checkpointLedger is a ledger whose transfers the tests below remember.
type checkpointLedger struct {
	t        *testing.T
	dir      string
	e        *Ledger
	accounts []string
	reqs     []ledger.TransferRequest
}

func openCheckpointLedger(t *testing.T) *checkpointLedger {
	c := &checkpointLedger{t: t, dir: t.TempDir()}
	c.reopen()
	for i := range 8 {
		id := fmt.Sprint("ck", i)
		mustOpenAccount(t, c.e, id, 0)
		c.accounts = append(c.accounts, id)
		c.transfer(ledger.TransferRequest{ID: "fund-" + id, From: ledger.WorldID, To: id, Amount: 1 << 30})
	}
	return c
}

// reopen opens the ledger on c's directory, closing the open one first.
func (c *checkpointLedger) reopen() {
	if c.e != nil {
		closeEngine(c.t, c.e)
	}
	// Short sweeps: journal records are trimmed every few batches.
	c.e = openEngine(c.t, opts{Dir: c.dir, Shards: 2, SweepEntries: 64, MaxBatch: 8})
}

func (c *checkpointLedger) transfer(req ledger.TransferRequest) {
	c.t.Helper()
	mustTransfer(c.t, c.e, req)
	c.reqs = append(c.reqs, req)
}

// traffic makes transfers of every kind, each with its own id: posted
// ones, holds voided, posted or left open, and atomic batches. A voided
// hold leaves no history entry and no open hold: only the journal record
// of the batch that opened it names it.
func (c *checkpointLedger) traffic(prefix string) {
	t := c.t
	for i := range 40 {
		from, to := c.accounts[i%len(c.accounts)], c.accounts[(i*3+1)%len(c.accounts)]
		req := func(kind string) ledger.TransferRequest {
			return ledger.TransferRequest{ID: fmt.Sprintf("%s-%s-%d", prefix, kind, i), From: from, To: to, Amount: int64(i + 1)}
		}
		c.transfer(req("posted"))
		for _, kind := range []string{"voided", "held", "post"} {
			r := req(kind)
			r.Pending = true
			c.transfer(r)
		}
		if _, err := c.e.VoidPending(ctx, req("voided").ID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.e.PostPending(ctx, req("post").ID, 0); err != nil {
			t.Fatal(err)
		}
		batch := []ledger.TransferRequest{req("batch-a"), req("batch-b")}
		batch[1].From, batch[1].To = to, from
		if _, err := c.e.TransferBatch(ctx, batch, true); err != nil {
			t.Fatal(err)
		}
		c.reqs = append(c.reqs, batch...)
	}
}

// checkpoint writes a checkpoint covering every published batch, as the
// shards ask for one when a sweep ends.
func (c *checkpointLedger) checkpoint() { checkpointAll(c.t, c.e) }

// checkpointAll has e write checkpoints until one covers every batch
// published; e must take no writes meanwhile.
func checkpointAll(t testing.TB, e *Ledger) {
	t.Helper()
	k := e.ckpt
	for i := range k.announced {
		for tries := 0; k.covered[i].Load() < k.announced[i].Load(); tries++ {
			if tries == 10 {
				t.Fatalf("no checkpoint covers shard %d's journal up to %d", i, k.announced[i].Load())
			}
			k.request()
			k.wg.Wait()
		}
	}
}

// wantAllKnown checks that every transfer made is known after a reopen:
// found by id, replayed for the same request, refused for another body.
// A filter that had lost an id would answer 404 and take the other body
// as a new transfer.
func (c *checkpointLedger) wantAllKnown(balances map[string]ledger.Account) {
	t := c.t
	for _, req := range c.reqs {
		if _, err := c.e.GetTransfer(ctx, req.ID); err != nil {
			t.Fatalf("GetTransfer(%s) after reopen: %v", req.ID, err)
		}
		other := req
		other.Amount++
		_, _, err := c.e.Transfer(ctx, other)
		wantCode(t, err, ledger.CodeIdempotencyConflict)
	}
	for id, before := range balances {
		if after := balance(t, c.e, id); after.Balance != before.Balance || after.Pending != before.Pending || after.Entries != before.Entries {
			t.Fatalf("%s after reopen %+v, before %+v", id, after, before)
		}
	}
	wantBalanced(t, c.e)
}

func (c *checkpointLedger) balances() map[string]ledger.Account {
	out := map[string]ledger.Account{}
	for _, id := range append([]string{ledger.WorldID}, c.accounts...) {
		out[id] = balance(c.t, c.e, id)
	}
	return out
}

// TestCheckpointRecovery reopens a ledger from a checkpoint of its
// transfer-id filter and the journal after it: every id made before and
// after the checkpoint is still known, and balances are those it had.
func TestCheckpointRecovery(t *testing.T) {
	c := openCheckpointLedger(t)
	c.traffic("before")
	c.checkpoint()
	// No checkpoint follows this one: the shards' sweeps go on and trim
	// their journals, but no further than it covers.
	c.e.ckpt.close()
	c.traffic("after")
	trims, err := c.e.db.JournalState()
	if err != nil || len(trims.Trimmed) == 0 {
		t.Fatalf("no journal trimmed: %+v %v", trims, err)
	}
	for s, n := range trims.Trimmed {
		if n > c.e.ckpt.covered[s].Load() {
			t.Fatalf("shard %d's journal trimmed below %d, past its checkpoint at %d", s, n, c.e.ckpt.covered[s].Load())
		}
	}
	epoch, balances := c.e.ckpt.epoch, c.balances()
	c.reopen()
	if c.e.ckpt.epoch != epoch {
		t.Fatal("the checkpoint was not used: recovery started a new journal epoch")
	}
	c.wantAllKnown(balances)
	// The next checkpoint and trims go on from where the journal was.
	c.traffic("reopened")
	c.checkpoint()
	c.traffic("reopened-after")
	balances = c.balances()
	c.reopen()
	c.wantAllKnown(balances)
}

// TestCheckpointNotUsable reopens a ledger whose checkpoint cannot serve
// it, damaged or older than its journal's trims: recovery reads every id
// instead, and knows them all.
func TestCheckpointNotUsable(t *testing.T) {
	for name, spoil := range map[string]func(c *checkpointLedger, path string, old []byte){
		"damaged": func(_ *checkpointLedger, path string, _ []byte) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x40
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"older than the trims": func(_ *checkpointLedger, path string, old []byte) {
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"missing": func(_ *checkpointLedger, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := openCheckpointLedger(t)
			c.traffic("first")
			c.checkpoint()
			path := filepath.Join(c.dir, checkpointFile)
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c.traffic("second")
			c.checkpoint()
			c.traffic("third")
			epoch, balances := c.e.ckpt.epoch, c.balances()
			closeEngine(t, c.e)
			spoil(c, path, old)
			c.e = nil
			c.reopen()
			if c.e.ckpt.epoch == epoch {
				t.Fatal("recovery used the checkpoint")
			}
			c.wantAllKnown(balances)
		})
	}
}
