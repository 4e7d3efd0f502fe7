package rpc

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/surge-dev/surge/internal/codec"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// recordCases are a command of every kind, every field set.
func recordCases() []command {
	at := time.Date(2026, 12, 6, 7, 40, 1, 123456789, time.UTC)
	head := presenceHead{At: at, Node: "n1", Inc: "i1"}
	return []command{
		&registerOp{User: social.User{Username: "ann", Name: "Ann É", PasswordHash: []byte("$2a$04$hash"), CreatedAt: at}},
		&relationOp{At: at, Me: 1, Peer: 300, Action: relRemove},
		&textOp{At: at, Me: 1, Peer: 2, Text: "hi \"bob\" é"},
		&markReadOp{Me: 2, Peer: 1, UpTo: 1 << 40},
		&remindOp{payment: payment{At: at, Me: 1, Peer: 2, Amount: 5, Text: "lunch", Transfer: "wallet:1:r1"}, RequestID: "r1"},
		&intentOp{At: at, Transfer: "wallet:1:t1"},
		&transferMsgOp{payment{At: at, Me: 1, Peer: 2, Amount: -7, Text: "memo", Transfer: "wallet:1:t1"}},
		&dropIntentOp{Transfer: "wallet:1:t2"},
		&userPresenceOp{presenceHead: head, User: 1, online: true},
		&userPresenceOp{presenceHead: head, User: 1},
		&snapshotOp{presenceHead: head, Users: []social.UserID{2, 3 << 30}, Start: true},
		&beatOp{presenceHead: head},
		&loginFailedOp{At: at, Login: "ann", Addr: "10.0.0.1"},
	}
}

// Every kind decodes to its own type with the fields sent; the record is
// the format byte, the kind's byte, then the fields.
func TestRecordRoundTrips(t *testing.T) {
	kinds := map[opKind]bool{}
	for _, c := range recordCases() {
		b := encodeCommand(c)
		if b[0] != recordBinary || opKind(b[1]) != c.kind() {
			t.Fatalf("%T encodes as format %#x kind %d, want %#x %d", c, b[0], b[1], recordBinary, c.kind())
		}
		got, err := decodeCommand(b)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("%T decoded %+v, %v; want %+v", c, got, err, c)
		}
		kinds[c.kind()] = true
	}
	for k := opRegister; k <= opLoginFailed; k++ {
		if !kinds[k] {
			t.Errorf("kind %d has no case", k)
		}
	}
	if newCommand(opLoginFailed+1) != nil {
		t.Errorf("kind %d is not covered by the cases", opLoginFailed+1)
	}
}

// damaged reports whether err refuses a record as the wires refuse
// damage.
func damaged(err error) bool {
	return errors.Is(err, codec.ErrCorrupt) || errors.Is(err, codec.ErrUnknownOp)
}

// A record cut anywhere, followed by anything, of an unknown format or
// kind, or with a list longer than its bytes, is refused as damage.
func TestRecordRefusesDamage(t *testing.T) {
	bad := [][]byte{
		nil, {recordBinary}, {0x02, byte(opBeat), 0, 0, 0}, {' '}, {'['},
		{recordBinary, 0}, {recordBinary, byte(opLoginFailed) + 1}, {recordBinary, 0xff},
		{recordBinary, byte(opSnapshot), 0, 0, 0, 0x7e, 1}, // a list of 63 users in one byte
		[]byte(`{`), []byte(`{"k":0}`), []byte(`{"k":99}`), []byte(`{"k":"3"}`), []byte(`{"k":3,"text":5}`),
		[]byte(`{"k":11,"us":[-1]}`), []byte(`{"k":1,"at":"x"} `[:15]),
	}
	for _, c := range recordCases() {
		b := encodeCommand(c)
		for n := 1; n < len(b); n++ {
			bad = append(bad, b[:n])
		}
		bad = append(bad, append(b, 0))
	}
	for _, b := range bad {
		if c, err := decodeCommand(b); !damaged(err) {
			t.Errorf("%q decoded %+v, %v; want damage refused", b, c, err)
		}
	}
}

// A damaged record is skipped by Apply: it changes nothing but the
// applied offset, answers its proposer with an internal error, and the
// records after it apply.
func TestApplySkipsDamagedRecord(t *testing.T) {
	nodes, _ := startMemCluster(t, 1)
	svc := nodes[0].svc
	ann := encodeCommand(&registerOp{User: social.User{Username: "ann", Name: "Ann", CreatedAt: time.Now().UTC()}})
	for i, rec := range [][]byte{ann[:len(ann)-1], ann} {
		v, err := svc.Apply(int64(i), rec)
		if err != nil {
			t.Fatal(err)
		}
		out := v.(outcome)
		if want := []error{errInternal, nil}[i]; out.err != want {
			t.Fatalf("record %d: outcome %v, want %v", i, out.err, want)
		}
	}
	if applied, err := svc.Applied(); err != nil || applied != 1 {
		t.Fatalf("applied %d, %v; want 1", applied, err)
	}
	if u, ok := svc.state.UserByName("ann"); !ok || u.ID != 1 {
		t.Fatalf("ann after a damaged record of hers: %+v %v, want id 1", u, ok)
	}
}

// FuzzDecodeRecord decodes any bytes without a panic; a binary record
// that decodes encodes again to a record that decodes alike.
func FuzzDecodeRecord(f *testing.F) {
	for _, c := range recordCases() {
		f.Add(encodeCommand(c))
	}
	for _, r := range oldRecords(time.Now().UTC()) {
		f.Add([]byte(r.json))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCommand(b)
		if err != nil {
			if !damaged(err) {
				t.Fatalf("%q refused with %v, not as damage", b, err)
			}
			return
		}
		if b[0] != recordBinary {
			return
		}
		again, err := decodeCommand(encodeCommand(c))
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("%q decoded %+v, then again %+v, %v", b, c, again, err)
		}
	})
}

// oldRecord is a record as the JSON format wrote it and the command it
// stands for.
type oldRecord struct {
	json string
	cmd  command
}

// annHash is a bcrypt hash of "password1"; annHashJSON, the same as
// JSON writes a []byte.
const (
	annHash     = "$2a$04$pN2SWASzwQNHzm9nmR4Rhujz.MmufsjjWOCiFixFlhuEK.6mS0i4i"
	annHashJSON = "JDJhJDA0JHBOMlNXQVN6d1FOSHptOW5tUjRSaHVqei5NbXVmc2pqV09DaUZpeEZsaHVFSy42bVMwaTRp"
)

// oldRecords are a history in the JSON format, written as json.Marshal
// wrote its ops (empty fields left out), each at time at: a record of
// every kind, then ten failed logins.
func oldRecords(at time.Time) []oldRecord {
	user := func(name, display string) social.User {
		return social.User{Username: name, Name: display, PasswordHash: []byte(annHash), CreatedAt: at}
	}
	head := func(n, i string) presenceHead { return presenceHead{At: at, Node: n, Inc: i} }
	recs := []oldRecord{
		{`{"k":1,"at":"@","u":{"ID":0,"Username":"ann","Name":"Ann","PasswordHash":"` + annHashJSON + `","CreatedAt":"@"}}`, &registerOp{User: user("ann", "Ann")}},
		{`{"k":1,"at":"@","u":{"ID":0,"Username":"bob","Name":"Bob","PasswordHash":"` + annHashJSON + `","CreatedAt":"@"}}`, &registerOp{User: user("bob", "Bob")}},
		{`{"k":2,"at":"@","me":1,"peer":2,"a":1}`, &relationOp{At: at, Me: 1, Peer: 2, Action: relRequest}},
		{`{"k":2,"at":"@","me":2,"peer":1,"a":2}`, &relationOp{At: at, Me: 2, Peer: 1, Action: relAccept}},
		{`{"k":3,"at":"@","me":1,"peer":2,"text":"hi \"bob\" é"}`, &textOp{At: at, Me: 1, Peer: 2, Text: `hi "bob" é`}},
		{`{"k":3,"at":"@","me":2,"peer":1,"text":"hi ann"}`, &textOp{At: at, Me: 2, Peer: 1, Text: "hi ann"}},
		{`{"k":4,"at":"@","me":2,"peer":1,"upto":1}`, &markReadOp{Me: 2, Peer: 1, UpTo: 1}},
		{`{"k":5,"at":"@","me":1,"peer":2,"text":"lunch","rid":"r1","amount":5,"t":"wallet:1:r1"}`,
			&remindOp{payment: payment{At: at, Me: 1, Peer: 2, Amount: 5, Text: "lunch", Transfer: "wallet:1:r1"}, RequestID: "r1"}},
		{`{"k":6,"at":"@","t":"wallet:1:t1"}`, &intentOp{At: at, Transfer: "wallet:1:t1"}},
		{`{"k":7,"at":"@","me":1,"peer":2,"text":"memo","amount":7,"t":"wallet:1:t1"}`,
			&transferMsgOp{payment{At: at, Me: 1, Peer: 2, Amount: 7, Text: "memo", Transfer: "wallet:1:t1"}}},
		{`{"k":6,"at":"@","t":"wallet:1:t2"}`, &intentOp{At: at, Transfer: "wallet:1:t2"}},
		{`{"k":8,"at":"@","t":"wallet:1:t2"}`, &dropIntentOp{Transfer: "wallet:1:t2"}},
		{`{"k":9,"at":"@","me":1,"n":"n1","i":"i1"}`, &userPresenceOp{presenceHead: head("n1", "i1"), User: 1, online: true}},
		{`{"k":9,"at":"@","me":2,"n":"n1","i":"i1"}`, &userPresenceOp{presenceHead: head("n1", "i1"), User: 2, online: true}},
		{`{"k":10,"at":"@","me":1,"n":"n1","i":"i1"}`, &userPresenceOp{presenceHead: head("n1", "i1"), User: 1}},
		{`{"k":11,"at":"@","n":"n2","i":"i2","us":[2],"st":true}`, &snapshotOp{presenceHead: head("n2", "i2"), Users: []social.UserID{2}, Start: true}},
		{`{"k":12,"at":"@","n":"n1","i":"i1"}`, &beatOp{presenceHead: head("n1", "i1")}},
	}
	for range 10 {
		recs = append(recs, oldRecord{`{"k":13,"at":"@","login":"ann","addr":"10.0.0.1"}`, &loginFailedOp{At: at, Login: "ann", Addr: "10.0.0.1"}})
	}
	for i := range recs {
		recs[i].json = strings.ReplaceAll(recs[i].json, `"@"`, `"`+at.Format(time.RFC3339Nano)+`"`)
	}
	return recs
}

// Each record of the JSON format decodes to its kind's command.
func TestOldJSONRecordsDecode(t *testing.T) {
	for _, r := range oldRecords(time.Now().UTC()) {
		got, err := decodeCommand([]byte(r.json))
		if err != nil || !reflect.DeepEqual(got, r.cmd) {
			t.Errorf("%s decoded %+v, %v; want %+v", r.json, got, err, r.cmd)
		}
	}
}

// appendRecord appends rec to n's log and returns its outcome on n.
func appendRecord(t *testing.T, n *memNode, rec []byte) outcome {
	t.Helper()
	n.repl.log.mu.Lock()
	defer n.repl.log.mu.Unlock()
	n.repl.log.records = append(n.repl.log.records, rec)
	v, err := n.repl.applyTo(len(n.repl.log.records) - 1)
	if err != nil {
		t.Fatal(err)
	}
	return v.(outcome)
}

// A history in the JSON format applies on a node of this format as its
// binary records do on another: the same outcomes, the same store, key
// for key, and the changes each kind makes.
func TestOldJSONRecordsApplyAsBinaryOnes(t *testing.T) {
	old, _ := startMemCluster(t, 1)
	bin, _ := startMemCluster(t, 1)
	for i, r := range oldRecords(time.Now().UTC()) {
		a, b := appendRecord(t, old[0], []byte(r.json)), appendRecord(t, bin[0], encodeCommand(r.cmd))
		if a.err != nil || b.err != nil {
			t.Fatalf("record %d (%s): refused %v (JSON), %v (binary)", i, r.json, a.err, b.err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("record %d (%s): outcome %+v, binary %+v", i, r.json, a, b)
		}
	}
	if a, b := socialPairs(t, old[0]), socialPairs(t, bin[0]); !reflect.DeepEqual(a, b) {
		t.Fatalf("the stores differ:\n%q\n%q", a, b)
	}
	checkOldHistory(t, old[0])
}

// socialPairs is n's social state as a snapshot holds it.
func socialPairs(t *testing.T, n *memNode) [][2]string {
	t.Helper()
	v, err := n.svc.store.SocialView()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var pairs [][2]string
	err = v.Each(func(k, v []byte) error { pairs = append(pairs, [2]string{string(k), string(v)}); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return pairs
}

// checkOldHistory checks what oldRecords made of n's state.
func checkOldHistory(t *testing.T, n *memNode) {
	t.Helper()
	ctx := context.Background()
	if _, err := n.auth.Login(ctx, connect.NewRequest(&walletv1.LoginRequest{Username: "ann", Password: "password1"})); err != nil {
		t.Errorf("ann logs in with the password of her JSON register: %v", err)
	}
	s := n.svc
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r, _ := s.state.Relation(1, 2); r.State != social.RelationFriends {
		t.Errorf("ann and bob: %+v, want friends", r)
	}
	c, ok := s.state.Conversation(1, 2)
	if !ok || c.Last.Seq != 3 || c.Last.Amount != 7 || c.Unread(2) != 1 {
		t.Errorf("their conversation %+v, want 3 messages, the last a transfer of 7, one unread by bob", c)
	}
	if r, found, err := s.store.ReminderFor(1, "r1"); err != nil || !found || r.Amount != 5 || r.Text != "lunch" {
		t.Errorf("ann's reminder r1: %+v %v %v", r, found, err)
	}
	if left, err := s.store.TransferIntentsBefore(time.Now().Add(time.Hour)); err != nil || len(left) != 0 {
		t.Errorf("intents left %v %v", left, err)
	}
	if s.state.Online(1) || !s.state.Online(2) {
		t.Errorf("online: ann %v, bob %v; want bob only", s.state.Online(1), s.state.Online(2))
	}
	if s.limiter.Admit("ann", "10.0.0.1") || !s.limiter.Admit("ann", "10.0.0.2") {
		t.Error("ten failed logins at ann from 10.0.0.1 do not refuse the next one there alone")
	}
}

// benchRecord encodes and decodes c, reporting the record's size.
func benchRecord(b *testing.B, c command) {
	var n int
	for b.Loop() {
		v := encodeCommand(c)
		n = len(v)
		if _, err := decodeCommand(v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "bytes/record")
}

func BenchmarkRecordText(b *testing.B) {
	benchRecord(b, &textOp{At: time.Now().UTC(), Me: 12345, Peer: 12346, Text: "see you at the station at eight?"})
}

func BenchmarkRecordRegister(b *testing.B) {
	u := social.User{Username: "ann.smith", Name: "Ann Smith", PasswordHash: []byte(annHash), CreatedAt: time.Now().UTC()}
	benchRecord(b, &registerOp{User: u})
}
