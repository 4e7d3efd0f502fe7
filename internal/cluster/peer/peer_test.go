package peer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// answer is what a test's receiver got for a request.
type answer struct {
	rid   string
	reply string
	err   error
}

type receiver chan answer

func (r receiver) Deliver(rid, reply []byte)  { r <- answer{rid: string(rid), reply: string(reply)} }
func (r receiver) Fail(rid []byte, err error) { r <- answer{rid: string(rid), err: err} }

// command is what a test's owner took.
type command struct {
	partition  int32
	key, value string
}

// testNode is a node's peers in a test, over a directory shared with the
// others, as if all read the same nodes topic.
type testNode struct {
	*Peers
	answers receiver
	taken   chan command
	links   chan string
	// dropping has the node's Take report what it takes as dropped.
	dropping atomic.Bool
}

func startNode(t testing.TB, id string, dir *directory, owned ...int32) *testNode {
	t.Helper()
	return startNodeWith(t, id, dir, Config{}, owned...)
}

// startNodeWith is startNode with cfg's budgets.
func startNodeWith(t testing.TB, id string, dir *directory, cfg Config, owned ...int32) *testNode {
	t.Helper()
	n := &testNode{answers: make(receiver, 64), taken: make(chan command, 64), links: make(chan string, 8)}
	cfg.Listen, cfg.Node, cfg.Dir, cfg.Kafka = "127.0.0.1:0", id, t.TempDir(), kafkalog.Config{Partitions: 6}
	p, err := newPeers(cfg, dir, n.answers, func(p int32, key, value []byte) bool {
		dropped := n.dropping.Load()
		n.taken <- command{p, string(key), string(value)}
		return !dropped
	})
	if err != nil {
		t.Fatal(err)
	}
	p.linked = func(node string) { n.links <- node }
	t.Cleanup(p.Close)
	n.Peers = p
	dir.set(id, entry{Addr: p.Addr(), FP: p.fp, Owned: owned})
	return n
}

// link has n open its link to the owner of partition, and returns once it
// is up; the first command, sent while it opens, is refused.
func (n *testNode) link(t testing.TB, partition int32) {
	t.Helper()
	if n.Send(partition, []byte("0:probe"), nil) {
		t.Fatal("a command went over a link not opened yet")
	}
	<-n.links
}

func TestPeerWithoutPinnedCertificateIsRefused(t *testing.T) {
	dir := newDirectory(6)
	owner := startNode(t, "b", dir, 1)
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "unpublished certificate": {mustCert(t)}} {
		t.Run(name, func(t *testing.T) {
			tc := clientTLS(tls.Certificate{}, owner.fp)
			tc.Certificates = certs
			// In TLS 1.3 the client's handshake ends before the owner
			// checks its certificate: the refusal comes as the owner's
			// first message would.
			conn, err := tls.Dial("tcp", owner.Addr(), tc)
			if err == nil {
				defer conn.Close()
				f := newFrames(conn)
				m, _ := appendEntry(nil, nil, 1, []byte("0:evil-1"), []byte("lcommand"))
				_ = f.write(m)
				err = f.welcomed()
			}
			if err == nil {
				t.Fatal("the owner opened a link for a client whose certificate no node published")
			}
		})
	}
	// A published node's command is the first the owner takes.
	front := startNode(t, "a", dir)
	front.link(t, 1)
	if !front.Send(1, []byte("0:a-1"), []byte("x")) {
		t.Fatal("the front node did not send over its link")
	}
	if c := <-owner.taken; c.key != "0:a-1" {
		t.Fatalf("the owner took %+v first, want a-1's command", c)
	}
}

func mustCert(t *testing.T) tls.Certificate {
	c, k, err := selfSigned("intruder")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestCommandsAndAnswersGoOverTheLink(t *testing.T) {
	dir := newDirectory(6)
	owner := startNode(t, "b", dir, 1, 2)
	front := startNode(t, "a", dir)
	if front.Send(0, []byte("0:a-0"), nil) {
		t.Fatal("sent a command for a partition no node owns")
	}
	front.link(t, 1)
	for i, p := range []int32{1, 2, 1} {
		if !front.Send(p, fmt.Appendf(nil, "0:a-%d", i+1), fmt.Appendf(nil, "cmd%d", i+1)) {
			t.Fatalf("command %d not sent", i+1)
		}
	}
	for i, p := range []int32{1, 2, 1} {
		c := <-owner.taken
		if want := (command{p, fmt.Sprintf("0:a-%d", i+1), fmt.Sprintf("cmd%d", i+1)}); c != want {
			t.Fatalf("took %+v, want %+v", c, want)
		}
	}
	if !owner.Owes([]byte("a-1")) || owner.Owes([]byte("a-9")) {
		t.Fatal("the owner's debts are wrong")
	}
	owner.Kafka([]byte("a-2"))
	if !owner.Reply([]byte("a-1"), []byte("done")) || !owner.Fail([]byte("a-3")) || owner.Reply([]byte("a-1"), nil) {
		t.Fatal("answers to requests owed once")
	}
	got := []answer{<-front.answers, <-front.answers}
	if got[0] != (answer{rid: "a-1", reply: "done"}) || got[1].rid != "a-3" || !errors.Is(got[1].err, errFailed) {
		t.Fatalf("answers %+v", got)
	}
}

// A peer's command whose request id is another node's is refused: no
// link can take the answer to another node's call.
func TestCommandsOfAnotherNodesRequestAreRefused(t *testing.T) {
	dir := newDirectory(6)
	owner := startNode(t, "b", dir, 1)
	startNode(t, "a", dir)
	front := startNode(t, "c", dir)
	front.link(t, 1)
	if !front.Send(1, []byte("0:a-1"), nil) || !front.Send(1, []byte("0:c-2"), nil) {
		t.Fatal("not sent")
	}
	if c := <-owner.taken; c.key != "0:c-2" {
		t.Fatalf("took %+v, want c's own command alone", c)
	}
	if a := <-front.answers; a.rid != "a-1" || !errors.Is(a.err, errFailed) {
		t.Fatalf("answer %+v, want a-1 refused", a)
	}
	if owner.Owes([]byte("a-1")) {
		t.Fatal("the owner owes a's request to c's link")
	}
}

func TestABrokenLinkFailsItsCallsAtOnce(t *testing.T) {
	dir := newDirectory(6)
	owner := startNode(t, "b", dir, 1)
	front := startNode(t, "a", dir)
	front.link(t, 1)
	for i := range 3 {
		if !front.Send(1, fmt.Appendf(nil, "0:a-%d", i), nil) {
			t.Fatal("not sent")
		}
		<-owner.taken
	}
	owner.Close()
	failed := map[string]bool{}
	for range 3 {
		a := <-front.answers
		if !errors.Is(a.err, ErrLinkDown) {
			t.Fatalf("answer %+v, want ErrLinkDown", a)
		}
		failed[a.rid] = true
	}
	if len(failed) != 3 {
		t.Fatalf("failed %v, want 3 calls", failed)
	}
	if front.Send(1, []byte("0:a-9"), nil) {
		t.Fatal("sent over a link that broke")
	}
}

// A link's budgets, of commands and of bytes: the front node's lets two
// commands through, the owner's one. Each side's is tried with the
// other's wide, so that no answer from the owner frees the front node's
// budget while it is being tried.
func TestLinksKeepTheirBudgets(t *testing.T) {
	big := make([]byte, 90)
	for name, c := range map[string]struct {
		owner, front Config
		value        []byte
	}{
		"commands": {Config{MaxInFlight: 1}, Config{MaxInFlight: 2}, nil},
		"bytes":    {Config{MaxInFlightBytes: 100}, Config{MaxInFlightBytes: 200}, big},
	} {
		t.Run(name+"/front", func(t *testing.T) {
			dir := newDirectory(6)
			owner := startNode(t, "b", dir, 1)
			front := startNodeWith(t, "a", dir, c.front)
			front.link(t, 1)
			if !front.Send(1, []byte("0:a-1"), c.value) || !front.Send(1, []byte("0:a-2"), c.value) {
				t.Fatal("not sent")
			}
			if front.Send(1, []byte("0:a-3"), c.value) {
				t.Fatal("a third command went over a link whose budget is taken")
			}
			for _, want := range []string{"0:a-1", "0:a-2"} {
				if c := <-owner.taken; c.key != want {
					t.Fatalf("took %+v, want %s", c, want)
				}
			}
			givesBack(t, owner, front, c.value)
		})
		t.Run(name+"/owner", func(t *testing.T) {
			dir := newDirectory(6)
			owner := startNodeWith(t, "b", dir, c.owner, 1)
			front := startNode(t, "a", dir)
			front.link(t, 1)
			if !front.Send(1, []byte("0:a-1"), c.value) || !front.Send(1, []byte("0:a-2"), c.value) {
				t.Fatal("not sent")
			}
			if c := <-owner.taken; c.key != "0:a-1" {
				t.Fatalf("took %+v", c)
			}
			// Over the owner's budget, the second fails at once.
			if a := <-front.answers; a.rid != "a-2" || !errors.Is(a.err, errFailed) {
				t.Fatalf("answer %+v, want a-2 failed", a)
			}
			givesBack(t, owner, front, c.value)
		})
	}
}

// givesBack has the owner answer a-1, which gives its place in both
// budgets back: the next command goes over the link.
func givesBack(t *testing.T, owner, front *testNode, value []byte) {
	t.Helper()
	owner.Reply([]byte("a-1"), nil)
	if a := <-front.answers; a.rid != "a-1" || a.err != nil {
		t.Fatalf("answer %+v", a)
	}
	if !front.Send(1, []byte("0:a-4"), value) {
		t.Fatal("the link's budget was not given back")
	}
	if c := <-owner.taken; c.key != "0:a-4" {
		t.Fatalf("took %+v", c)
	}
}

// A connection over the peer port's budget is closed at once, not left
// waiting in the listener's backlog.
func TestPeerPortClosesConnectionsOverItsBudget(t *testing.T) {
	owner := startNodeWith(t, "b", newDirectory(6), Config{MaxConns: 2}, 1)
	for range 2 {
		c, err := net.Dial("tcp", owner.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	over, err := net.Dial("tcp", owner.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	if _, err := over.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection over the budget was served")
	}
	if n := testutil.ToFloat64(owner.met.refused); n != 1 {
		t.Fatalf("%v connections refused, want 1", n)
	}
}

// A place a closed connection gives back takes the next one.
func TestCappedListenerGivesPlacesBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := prometheus.NewCounter(prometheus.CounterOpts{Name: "refused"})
	capped := &cappedListener{Listener: ln, max: 1, refused: refused}
	defer capped.Close()
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := capped.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	first := <-accepted
	if _, err := dial().Read(make([]byte, 1)); err == nil || testutil.ToFloat64(refused) != 1 {
		t.Fatalf("the second connection was not refused: %v", err)
	}
	first.Close()
	first.Close() // a second Close gives nothing back
	dial()
	second := <-accepted
	if _, err := dial().Read(make([]byte, 1)); err == nil || testutil.ToFloat64(refused) != 2 {
		t.Fatalf("a connection over the budget was not refused: %v", err)
	}
	second.Close()
}

func TestMessagesRoundTripAndRefuseGarbage(t *testing.T) {
	m, scratch := appendEntry(nil, nil, 7, []byte("k"), []byte("value"))
	m, _ = appendEntry(m, scratch, answerKafka, nil, nil)
	var got []string
	if err := eachEntry(m, func(tag uint64, k, v []byte) { got = append(got, fmt.Sprintf("%d/%s/%s", tag, k, v)) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[7/k/value 2//]" {
		t.Fatalf("entries %v", got)
	}
	for _, bad := range [][]byte{{0x80}, {1, 'k', 5, 'v'}, {1, 'k', 1, 0x80}, {1, 'k', 0}} {
		if err := eachEntry(bad, func(uint64, []byte, []byte) {}); !errors.Is(err, errBadMessage) {
			t.Errorf("%x: %v, want errBadMessage", bad, err)
		}
	}
}

// Whatever an authenticated peer sends, decoding its message neither
// panics nor yields an entry reaching past the message, and a message
// re-packed from the entries decoded decodes to the same entries.
func FuzzMessages(f *testing.F) {
	m, scratch := appendEntry(nil, nil, 7, []byte("0:a-1"), []byte("value"))
	m, _ = appendEntry(m, scratch, answerKafka, []byte("a-1"), nil)
	f.Add(m)
	for _, bad := range [][]byte{{0x80}, {1, 'k', 5, 'v'}, {1, 'k', 1, 0x80}, {1, 'k', 0}, {}} {
		f.Add(bad)
	}
	f.Fuzz(func(t *testing.T, m []byte) {
		var again, scratch []byte
		var n int
		err := eachEntry(m, func(tag uint64, key, value []byte) {
			if len(key)+len(value) > len(m) {
				t.Fatalf("an entry of %d bytes in a message of %d", len(key)+len(value), len(m))
			}
			requestID(key)
			again, scratch = appendEntry(again, scratch, tag, key, value)
			n++
		})
		if err != nil {
			return
		}
		var n2 int
		if err := eachEntry(again, func(uint64, []byte, []byte) { n2++ }); err != nil || n2 != n {
			t.Fatalf("re-packed: %d entries, %v; want %d", n2, err, n)
		}
	})
}

// The forwards the owner's Take drops are counted: here it drops two,
// then takes a third, which comes after them on the link.
func TestDroppedForwardsAreCounted(t *testing.T) {
	dir := newDirectory(6)
	owner := startNode(t, "b", dir, 1)
	front := startNode(t, "a", dir)
	front.link(t, 1)
	owner.dropping.Store(true)
	for seq := range uint64(3) {
		if seq == 2 {
			owner.dropping.Store(false)
		}
		fwd := kafkalog.AppendForward(nil, kafkalog.Forwarded{From: 0, To: 1, Seq: seq + 1, Value: []byte("lcredit")})
		if !front.Forward(1, nil, fwd) {
			t.Fatal("the front node did not send the forward over its link")
		}
		<-owner.taken
	}
	if n := testutil.ToFloat64(owner.met.forwardsDropped); n != 2 {
		t.Fatalf("forwards dropped counted %v, want 2", n)
	}
}

// A forward of the rounds goes over the link to its partition's owner
// with no call waiting for it: the owner takes it, owes no answer for it
// (even for a key shaped as a request's), and a value of another kind is
// not sent as a forward.
func TestForwardGoesOverTheLinkAndOwesNoAnswer(t *testing.T) {
	dir := newDirectory(6)
	owner := startNode(t, "b", dir, 1)
	front := startNode(t, "a", dir)
	front.link(t, 1)
	fwd := string(kafkalog.AppendForward(nil, kafkalog.Forwarded{From: 0, To: 1, Seq: 1, Value: []byte("lcredit")}))
	if !front.Forward(1, []byte("0:a-7"), []byte(fwd)) {
		t.Fatal("the front node did not send the forward over its link")
	}
	if c := <-owner.taken; c.partition != 1 || c.value != fwd {
		t.Fatalf("the owner took %+v, want the forward", c)
	}
	if owner.Owes([]byte("a-7")) {
		t.Fatal("the owner owes an answer to a forward")
	}
	if front.Forward(1, []byte("0:a-8"), []byte("lcommand")) {
		t.Fatal("a command went over the link as a forward")
	}
}

// A request id in flight on a link is not taken a second time: the front
// node refuses to send it again, and an owner sent it again anyway fails
// the copy and still owes the first.
func TestARequestInFlightIsNotTakenTwice(t *testing.T) {
	dir := newDirectory(6)
	owner := startNode(t, "b", dir, 1)
	front := startNode(t, "a", dir)
	front.link(t, 1)
	if !front.Send(1, []byte("0:a-1"), []byte("cmd")) {
		t.Fatal("not sent")
	}
	if front.Send(1, []byte("0:a-1"), []byte("cmd")) {
		t.Fatal("the front node sent a request in flight again")
	}
	if c := <-owner.taken; c.key != "0:a-1" {
		t.Fatalf("took %+v", c)
	}
	front.mu.Lock()
	l := front.Peers.links["b"]
	front.mu.Unlock()
	l.out.add(1, []byte("0:a-1"), []byte("cmd")) // past the front node's check
	if !front.Send(1, []byte("0:a-2"), []byte("cmd")) {
		t.Fatal("not sent")
	}
	if c := <-owner.taken; c.key != "0:a-2" {
		t.Fatalf("took %+v after the copy, want a-2", c)
	}
	if a := <-front.answers; a.rid != "a-1" || !errors.Is(a.err, errFailed) {
		t.Fatalf("answer %+v, want the copy of a-1 failed", a)
	}
	if !owner.Owes([]byte("a-1")) {
		t.Fatal("the owner forgot the first a-1")
	}
}
