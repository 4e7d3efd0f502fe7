package walletstore

import (
	"reflect"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// TestConversationHeadFromMessages: only a conversation's first message
// writes its head, and a later read mark rewrites it with a newest seq
// that is stale by then; loading still finds the newest message, and keeps
// the read marks.
func TestConversationHeadFromMessages(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	const alice, bob = social.UserID(7), social.UserID(3)
	p := social.PairOf(alice, bob)
	at := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	// bob is the pair's Lo, so Sent counts bob's messages first.
	msgs := []social.Message{
		{Seq: 1, From: alice, To: bob, Kind: social.KindText, Text: "hi", At: at, Sent: [2]uint64{0, 1}},
		{Seq: 2, From: bob, To: alice, Kind: social.KindText, Text: "hello", At: at.Add(time.Second), Sent: [2]uint64{1, 1}},
		{Seq: 3, From: alice, To: bob, Kind: social.KindTransfer, Text: "lunch", Amount: 12, TransferID: "wallet:7:r1", At: at.Add(2 * time.Second), Sent: [2]uint64{1, 2}},
	}
	for i := range msgs {
		if n, want := len(MessageRecords(&msgs[i])), map[bool]int{true: 2, false: 1}[msgs[i].Seq == 1]; n != want {
			t.Fatalf("message %d: %d records, want %d", msgs[i].Seq, n, want)
		}
		b := s.NewSocialBatch()
		b.PutMessage(&msgs[i])
		if i == 1 {
			// bob reads up to message 1, after message 2 was written.
			marks := [2]social.ReadMark{}
			marks[0] = social.ReadMark{Seq: 1, PeerSent: 1}
			b.PutHead(p, 2, marks)
		}
		if err := s.Commit(b.Batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir)
	defer s.Close()
	st := social.NewState()
	if err := s.LoadSocial(st); err != nil {
		t.Fatal(err)
	}
	c, ok := st.Conversation(alice, bob)
	if !ok {
		t.Fatal("conversation not loaded")
	}
	if !reflect.DeepEqual(c.Last, msgs[2]) {
		t.Errorf("newest message %+v, want %+v", c.Last, msgs[2])
	}
	if want := (social.ReadMark{Seq: 1, PeerSent: 1}); c.Read[0] != want || c.Read[1] != (social.ReadMark{}) {
		t.Errorf("read marks %+v, want bob's %+v and none for alice", c.Read, want)
	}
}

func openStore(t *testing.T, dir string) Store {
	t.Helper()
	s, err := store.Open(dir, store.Options{CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return Store{s}
}

// TestReminders: a reminder is listed for both its users, newest first,
// found again by its sender's request id, and kept across a reopen.
func TestReminders(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	at := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	rs := []social.Reminder{
		{ID: 11, From: 1, To: 2, Amount: 1000, Text: "lunch", At: at},
		{ID: 12, From: 2, To: 1, Amount: 2500, Text: "", At: at.Add(time.Second)},
		{ID: 13, From: 3, To: 2, Amount: 4000, Text: "tickets", At: at.Add(2 * time.Second)},
	}
	for i := range rs {
		b := s.NewSocialBatch()
		b.PutReminder("r1", &rs[i])
		if err := s.Commit(b.Batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	defer s.Close()
	for _, c := range []struct {
		user  social.UserID
		limit int
		want  []social.Reminder
	}{
		{1, 10, []social.Reminder{rs[1], rs[0]}},
		{2, 10, []social.Reminder{rs[2], rs[1], rs[0]}},
		{2, 2, []social.Reminder{rs[2], rs[1]}},
		{3, 10, []social.Reminder{rs[2]}},
		{4, 10, []social.Reminder{}},
	} {
		got, err := s.Reminders(c.user, c.limit)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Reminders(%d, %d) = %+v, %v; want %+v", c.user, c.limit, got, err, c.want)
		}
	}
	if r, ok, err := s.ReminderFor(3, "r1"); err != nil || !ok || r != rs[2] {
		t.Errorf("ReminderFor(3, r1) = %+v %v %v", r, ok, err)
	}
	if _, ok, err := s.ReminderFor(3, "r2"); err != nil || ok {
		t.Errorf("ReminderFor(3, r2) found %v, %v", ok, err)
	}
}

// TestReplaceSocialKeepsTheNodesOwnKeys: a snapshot holds every social key
// but the node's own (sk/), and replacing a store's social state with it
// drops the keys the snapshot lacks, keeps the node's own, and takes the
// snapshot's applied offset.
func TestReplaceSocialKeepsTheNodesOwnKeys(t *testing.T) {
	from, to := openStore(t, t.TempDir()), openStore(t, t.TempDir())
	write := func(s Store, pairs ...string) {
		t.Helper()
		b := s.NewSocialBatch()
		for i := 0; i < len(pairs); i += 2 {
			_ = b.Set([]byte(pairs[i]), []byte(pairs[i+1]), nil)
		}
		if err := s.Commit(b.Batch); err != nil {
			t.Fatal(err)
		}
	}
	write(from, "sk/token", "from's secret", "su/1", "ann", "sm/1", "hi")
	putApplied(t, from, 41)
	write(to, "sk/presence-node", "to's name", "su/9", "stale")
	putApplied(t, to, 3)

	view, err := from.SocialView()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	if err := to.ReplaceSocial(func(put func(k, v []byte) error) error { return view.Each(put) }); err != nil {
		t.Fatal(err)
	}
	var got []string
	err = to.Scan([]byte("s"), []byte("t"), false, func(k, v []byte) (bool, error) {
		if string(k) != string(keyApplied) {
			got = append(got, string(k)+"="+string(v))
		}
		return true, nil
	})
	want := []string{"sk/presence-node=to's name", "sm/1=hi", "su/1=ann"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after the replace: %q (%v), want %q", got, err, want)
	}
	if applied, err := to.Applied(); applied != 41 || err != nil {
		t.Fatalf("applied offset %d (%v), want 41", applied, err)
	}
}

// putApplied records offset as s's applied offset.
func putApplied(t *testing.T, s Store, offset int64) {
	t.Helper()
	b := s.NewSocialBatch()
	b.PutApplied(offset)
	if err := s.Commit(b.Batch); err != nil {
		t.Fatal(err)
	}
}
