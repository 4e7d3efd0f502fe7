package node

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerapi"
	"github.com/surge-dev/surge/internal/ledger/ledgercluster"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketapi"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
)

// The ledger of a node on franz-go's in-memory Kafka (kfake), checked
// against the single process's ledger: the same calls give the same
// answers. kfake serves the node's consumer group, its writes and its
// fetches; the end-to-end tests run a real broker.

// clusterNode is a node on a fresh kfake cluster, once it serves, with
// @world created (snapshot_test.go starts it).
func clusterNode(t *testing.T) *Node {
	t.Helper()
	_, k := fakeKafka(t)
	n := startNode(t, k, t.TempDir())
	settled(t, n)
	if err := n.CreateWorld(context.Background()); err != nil {
		t.Fatal(err)
	}
	return n.Node
}

// openSingle opens the single process's ledger and ticketing on
// testShards shards.
func openSingle(t *testing.T) (*ledgerengine.Ledger, *ticketengine.Tickets) {
	t.Helper()
	eng, err := engine.Open(engine.Config{Dir: t.TempDir(), Shards: testShards, NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledgerengine.Open(eng, ledgerengine.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := ticketengine.Open(eng, l, ticketengine.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	eng.Start()
	t.Cleanup(func() { l.Close(); _ = eng.Close() })
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tk.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l, tk
}

// idIn returns an id with prefix that hashes to partition p.
func idIn(prefix string, p int) string {
	for i := 0; ; i++ {
		if id := fmt.Sprint(prefix, i); engine.ShardIndex(id, testShards) == p {
			return id
		}
	}
}

// transcript records a ledger's answers without their times, to compare
// two ledgers given the same calls.
type transcript struct {
	ctx     context.Context
	l       ledgerapi.Ledger
	tickets ticketapi.Box
	// resend sends reservation id's request again, as a node whose call
	// timed out does, and returns the answer; nil where requests are not
	// sent (the single process: the answer is the reservation as it is).
	resend func(id, user string, req tickets.ReserveRequest) (tickets.Reservation, error)
	out    []string
}

// serverID matches the ids the server gives transfers: each run its own.
var serverID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func (s *transcript) note(format string, args ...any) {
	line := serverID.ReplaceAllString(fmt.Sprintf(format, args...), "(new id)")
	s.out = append(s.out, paymentSuffix.ReplaceAllString(line, "$1"))
}

func (s *transcript) transfer(t ledger.Transfer, err error) {
	s.note("%s %s>%s %d %s posted=%d two=%v err=%s", t.ID, t.From, t.To, t.Amount, t.State, t.PostedAmount, t.TwoPhase, ledger.CodeOf(err))
}

// accounts notes the accounts' balances, holds and whole histories, and the
// ledger's totals.
func (s *transcript) accounts(ids ...string) {
	for _, id := range ids {
		a, err := s.l.Account(s.ctx, id)
		s.note("%s balance=%d pending=%d entries=%d err=%s", id, a.Balance, a.Pending, a.Entries, ledger.CodeOf(err))
		h, err := s.l.History(s.ctx, id, ledger.HistoryQuery{Limit: ledger.MaxPageSize})
		for _, e := range h.Entries {
			s.note("  %d %s %s %d after=%d with=%s", e.Seq, e.TransferID, e.Direction, e.Amount, e.BalanceAfter, e.Counterpart)
		}
		if err != nil {
			s.note("  history err=%s", ledger.CodeOf(err))
		}
	}
	st, err := s.l.Stats(s.ctx)
	sum := map[string]int64{}
	for c, v := range st.BalanceSum {
		sum[c] += v
	}
	for c, v := range st.CreditsInFlight {
		sum[c] += v
	}
	s.note("accounts=%d sum=%v err=%s", st.Accounts, sum, ledger.CodeOf(err))
}

// same runs script on the single process's ledger and ticketing and on a
// cluster node, and fails if their transcripts differ.
func same(t *testing.T, script func(s *transcript)) {
	ctx := context.Background()
	l, tk := openSingle(t)
	single := &transcript{ctx: ctx, l: l, tickets: tk}
	script(single)
	n := clusterNode(t)
	cluster := &transcript{ctx: ctx, l: n.Ledger(), tickets: n.Tickets(), resend: resender(n)}
	script(cluster)
	for i := range max(len(single.out), len(cluster.out)) {
		if i >= len(single.out) || i >= len(cluster.out) || single.out[i] != cluster.out[i] {
			t.Fatalf("a cluster node answered, from line %d,\n%s\n\nthe single process\n%s", i+1,
				strings.Join(cluster.out[min(i, len(cluster.out)):], "\n"), strings.Join(single.out[min(i, len(single.out)):], "\n"))
		}
	}
}

// open creates USD accounts and funds each from @world.
func open(s *transcript, fund int64, ids ...string) {
	for _, id := range ids {
		_, _, err := s.l.CreateAccount(s.ctx, ledger.AccountSpec{ID: id, Currency: "USD"})
		s.note("open %s err=%s", id, ledger.CodeOf(err))
		if fund > 0 {
			s.transfer(tr(s, ledger.TransferRequest{ID: "fund-" + id, From: ledger.WorldID, To: id, Amount: fund}))
		}
	}
}

func tr(s *transcript, req ledger.TransferRequest) (ledger.Transfer, error) {
	t, replayed, err := s.l.Transfer(s.ctx, req)
	if replayed {
		s.note("replayed %s", req.ID)
	}
	return t, err
}

// Two-phase transfers between partitions: holds, partial and whole posts,
// voids, replays and every refusal give a single node's answers, states,
// balances and histories; money is conserved throughout.
func TestClusterTwoPhaseAnswersAsOneNode(t *testing.T) {
	a, b, c := idIn("a", 0), idIn("b", 1), idIn("c", 2)
	same(t, func(s *transcript) {
		open(s, 1000, a, b, c)
		pend := func(id, from, to string, amount int64) {
			s.transfer(tr(s, ledger.TransferRequest{ID: id, From: from, To: to, Amount: amount, Pending: true}))
		}
		pend("p1", a, b, 300)
		pend("p2", a, c, 500)
		pend("p3", b, a, 100)
		pend("p1", a, b, 300)                                                            // a replay
		pend("p1", a, b, 301)                                                            // another body
		pend("p4", a, b, 300)                                                            // a holds 800 of 1000: insufficient
		s.transfer(tr(s, ledger.TransferRequest{ID: "t1", From: a, To: c, Amount: 250})) // 200 left
		s.accounts(a, b, c)
		s.transfer(s.l.PostPending(s.ctx, "p1", 120))
		s.transfer(s.l.PostPending(s.ctx, "p2", 501)) // exceeds
		s.transfer(s.l.PostPending(s.ctx, "p2", 0))
		s.transfer(s.l.VoidPending(s.ctx, "p3"))
		s.transfer(s.l.PostPending(s.ctx, "p1", 0))   // not pending any more
		s.transfer(s.l.VoidPending(s.ctx, "p2"))      // posted
		s.transfer(s.l.PostPending(s.ctx, "nope", 0)) // not found
		s.transfer(s.l.VoidPending(s.ctx, "nope"))
		for _, id := range []string{"p1", "p2", "p3", "t1"} {
			s.transfer(s.l.GetTransfer(s.ctx, id))
		}
		s.accounts(a, b, c)
	})
}

// batch notes an atomic batch's outcome, item by item.
func batch(s *transcript, reqs ...ledger.TransferRequest) {
	res, err := s.l.TransferBatch(s.ctx, reqs, true)
	s.note("batch of %d err=%v", len(reqs), err)
	for _, r := range res {
		s.note("  replayed=%v", r.Replayed)
		s.transfer(r.Transfer, r.Err)
	}
}

func item(id, from, to string, amount int64) ledger.TransferRequest {
	return ledger.TransferRequest{ID: id, From: from, To: to, Amount: amount, Memo: "m-" + id}
}

// Atomic batches across partitions give a single node's answers: all
// applied, credits usable by later items on other partitions, or none
// applied when an item on any partition fails (funds, an unknown
// receiver, an id taken with another body); replayed whole or in part; and
// no effect of an aborted batch shows anywhere.
func TestClusterAtomicBatchesAnswerAsOneNode(t *testing.T) {
	a, b, c := idIn("a", 0), idIn("b", 1), idIn("c", 2)
	a2 := idIn("a-", 0)
	same(t, func(s *transcript) {
		open(s, 100, a, b, c, a2)
		// b is funded by a (partition 0) and spends it at once on c.
		batch(s, item("x1", a, b, 60), item("x2", b, c, 150), item("x3", c, a2, 10))
		s.accounts(a, b, c, a2)
		// the last item, on partition 2, fails: nothing of the batch shows.
		batch(s, item("y1", a, b, 10), item("y2", b, a, 5), item("y3", c, a, 500))
		// the first failure in batch order is reported, whichever partition fails.
		batch(s, item("z1", a, b, 10), item("z2", b, c, 1000), item("z3", a2, c, 1000))
		// an unknown receiver after an item that fails first; then one that is first to fail.
		batch(s, item("u1", a, b, 10), item("u2", c, b, 5000), item("u3", a, "ghost", 1))
		batch(s, item("v1", a, b, 10), item("v2", b, "ghost", 1), item("v3", c, b, 5000))
		// an id taken with another body.
		batch(s, item("w1", a, b, 10), item("x2", b, c, 151))
		s.accounts(a, b, c, a2)
		// the first batch again: replayed; then in part with new items.
		batch(s, item("x1", a, b, 60), item("x2", b, c, 150), item("x3", c, a2, 10))
		batch(s, item("r1", c, b, 30), item("x1", a, b, 60), item("r2", b, a, 90), item("r3", a2, c, 5))
		// a replayed item whose credit a later item needs: it moves nothing.
		batch(s, item("q1", a2, b, 1), item("x3", c, a2, 10), item("q2", a2, a, 115))
		// items without ids, and pending ones.
		batch(s, ledger.TransferRequest{From: a, To: c, Amount: 1}, ledger.TransferRequest{ID: "pp", From: b, To: a, Amount: 2, Pending: true})
		s.transfer(s.l.PostPending(s.ctx, "pp", 0))
		for _, id := range []string{"x1", "x2", "x3", "y1", "y3", "z1", "u1", "v1", "w1", "r1", "r2", "q1", "q2"} {
			s.transfer(s.l.GetTransfer(s.ctx, id))
		}
		s.accounts(a, b, c, a2)
	})
}

// Stats read while transfers, two-phase transfers and atomic batches
// between partitions run always sum to 0, though a read may share its
// partition's round with debits whose credits are not yet forwarded.
func TestClusterStatsSumToZeroUnderLoad(t *testing.T) {
	ctx := context.Background()
	l := clusterNode(t).Ledger()
	ids := []string{idIn("a", 0), idIn("a", 1), idIn("a", 2), idIn("b", 0), idIn("b", 1), idIn("b", 2)}
	s := &transcript{ctx: ctx, l: l}
	open(s, 10_000, ids...)
	stop := make(chan struct{})
	reads := make(chan int, 1)
	go func() {
		n := 0
		defer func() { reads <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			st, err := l.Stats(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if sum := st.BalanceSum["USD"] + st.CreditsInFlight["USD"]; sum != 0 {
				t.Errorf("balances %v + credits in flight %v = %d", st.BalanceSum, st.CreditsInFlight, sum)
			}
			n++
		}
	}()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { mixedLoad(ctx, l, ids, w, 30) })
	}
	wg.Wait()
	close(stop)
	t.Logf("%d reads of the stats", <-reads)
}

// mixedLoad makes n operations between ids on l: in turn an atomic batch
// of three items, a two-phase transfer posted at once, and a transfer.
func mixedLoad(ctx context.Context, l *ledgercluster.Ledger, ids []string, w, n int) {
	rng := rand.New(rand.NewPCG(uint64(w), 3))
	pair := func() (string, string) {
		a, b := rng.IntN(len(ids)), rng.IntN(len(ids)-1)
		if b >= a {
			b++
		}
		return ids[a], ids[b]
	}
	for i := range n {
		from, to := pair()
		switch i % 3 {
		case 0:
			items := []ledger.TransferRequest{{ID: fmt.Sprintf("b%d-%d", w, i), From: from, To: to, Amount: int64(1 + rng.IntN(50))}}
			for k := range 2 {
				f, t := pair()
				items = append(items, ledger.TransferRequest{ID: fmt.Sprintf("b%d-%d-%d", w, i, k), From: f, To: t, Amount: int64(1 + rng.IntN(50))})
			}
			_, _ = l.TransferBatch(ctx, items, true)
		case 1:
			id := fmt.Sprintf("p%d-%d", w, i)
			_, _, _ = l.Transfer(ctx, ledger.TransferRequest{ID: id, From: from, To: to, Amount: 7, Pending: true})
			_, _ = l.PostPending(ctx, id, int64(rng.IntN(8)))
		default:
			_, _, _ = l.Transfer(ctx, ledger.TransferRequest{ID: fmt.Sprintf("t%d-%d", w, i), From: from, To: to, Amount: 3})
		}
	}
}

// An atomic batch across partitions too large to travel as one Kafka
// record is refused whole with invalid_argument, and nothing of it is
// applied.
func TestClusterRefusesAnAtomicBatchTooLargeForARecord(t *testing.T) {
	ctx := context.Background()
	l := clusterNode(t).Ledger()
	a, b := idIn("a", 0), idIn("b", 1)
	s := &transcript{ctx: ctx, l: l}
	open(s, 10_000, a, b)
	reqs := make([]ledger.TransferRequest, 8190) // the single node's largest batch, with the longest memos
	memo := strings.Repeat("m", ledger.MaxMemoLength)
	for i := range reqs {
		reqs[i] = ledger.TransferRequest{ID: fmt.Sprint("big-", i), From: a, To: b, Amount: 1, Memo: memo}
		if i%2 == 1 {
			reqs[i].From, reqs[i].To = b, a
		}
	}
	res, err := l.TransferBatch(ctx, reqs, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if ledger.CodeOf(r.Err) != ledger.CodeInvalidArgument {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	if _, err := l.GetTransfer(ctx, "big-0"); ledger.CodeOf(err) != ledger.CodeTransferNotFound {
		t.Fatalf("big-0: %v", err)
	}
	for i := range reqs {
		reqs[i].Memo = ""
	}
	if res, _ := l.TransferBatch(ctx, reqs[:1000], true); res[999].Err != nil {
		t.Fatalf("1,000 items: %v", res[999].Err)
	}
}
