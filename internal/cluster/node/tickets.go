package node

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// Ticket reservations in a cluster. An event's spec lives in the partition
// its name hashes to, each of its areas in the partition of the area's key
// (event, area), with the seat map and every reservation of the area: that
// partition's owner alone allocates the area's seats, with the domain's
// tickets.Desk (the state machine a single process runs), so no seat is
// sold twice. A reservation's id is chosen so
// that it hashes to its area's partition, where any node reads, cancels
// it and sees the area's seat map. Holds expire on the owner's Ticks.
// Paying (tickets_pay.go) and per-user seat limits (tickets_limit.go) are
// chains of commands, each forwarded in its sender's round transaction
// (tickets_chain.go). The cluster's hold secret
// (which signs reservations' hold tokens on every node) is kept in the
// partition of holdSecretKey, chosen by the first node that asks.

// Keys of the owner's store (and changelog).
var (
	tkEventPrefix = []byte("tc/e/")
	tkAreaPrefix  = []byte("tc/a/")
	tkResvPrefix  = []byte("tc/r/")
	tkSecretKey   = []byte("tc/s")
	tkPayPrefix   = []byte("tc/p/")
	tkUserPrefix  = []byte("tc/u/")
)

// holdSecretKey is the partitioning key of the cluster's hold secret.
const holdSecretKey = "surge hold secret"

func tkKey(prefix []byte, id string) []byte { return append(append([]byte(nil), prefix...), id...) }

// Ticket operations on the wire.
const (
	tkCreateEvent = "create_event"
	tkCreateArea  = "create_area"
	tkGetEvent    = "event"
	tkAreaFree    = "area_free"
	tkReserve     = "reserve"
	tkGet         = "reservation"
	tkCancel      = "cancel"
	tkInspect     = "inspect"
	tkSecret      = "hold_secret"
	tkPay         = "pay"
	tkPayEnd      = "pay_end"
	tkClaim       = "limit_claim"
	tkRelease     = "limit_release"
	tkFlush       = "flush"
)

// ticketCommand is a ticket command, on the wire and as the owner applies
// it, with its outcome.
type ticketCommand struct {
	Op     string                  `json:"op"`
	Event  *tickets.EventSpec      `json:"event,omitempty"`
	AreaID string                  `json:"area,omitempty"`
	ID     string                  `json:"id,omitempty"`
	User   string                  `json:"user,omitempty"`
	Req    *tickets.ReserveRequest `json:"req,omitempty"`
	// Outcomes.
	Created     bool                 `json:"created,omitempty"`
	Conflict    bool                 `json:"conflict,omitempty"`
	Found       bool                 `json:"found,omitempty"`
	Free        int                  `json:"free,omitempty"`
	SoldOutAt   time.Time            `json:"sold_out_at,omitzero"`
	Reservation *tickets.Reservation `json:"reservation,omitempty"`
	Seats       *tickets.AreaSeats   `json:"seats,omitempty"`
	// Secret is the hold secret a node proposes, and the cluster's.
	Secret []byte `json:"secret,omitempty"`
	// Currency is the organizer's, with create_area.
	Currency string `json:"currency,omitempty"`
	// Account pays, with pay.
	Account string `json:"account,omitempty"`
	// Chains of commands (tickets_chain.go): where the chain's answer
	// goes, a limited reservation's claim and its limit, a payment's
	// attempt and its debit's outcome.
	ReplyTo *replyAddr      `json:"reply_to,omitempty"`
	Claim   string          `json:"claim,omitempty"`
	Limit   int             `json:"limit,omitempty"`
	Attempt int             `json:"attempt,omitempty"`
	Ledger  json.RawMessage `json:"ledger,omitempty"`
	// Err is a pay's or a cancel's refusal, by the desk or the ledger;
	// Fault, the ledger's fault.
	Err   *ledger.Error `json:"err,omitempty"`
	Fault string        `json:"fault,omitempty"`
	// from is where the command's own reply goes (its key), if anywhere;
	// deferred says a later step of its chain answers it.
	from     *replyAddr
	deferred bool
}

// tkArea is an area on its owner.
type tkArea struct {
	event     *tickets.EventSpec
	spec      tickets.AreaSpec
	currency  string // the organizer's
	seats     *tickets.Area
	soldOutAt time.Time
}

// tkRecord is an area's stored record.
type tkRecord struct {
	Event    tickets.EventSpec `json:"event"`
	Area     string            `json:"area"`
	Currency string            `json:"currency,omitempty"`
}

// ticketSlice is the events, areas and reservations of one shard on its
// owner (an engine.Slice).
type ticketSlice struct {
	events map[string]*tickets.EventSpec
	areas  map[string]*tkArea
	// desk decides the shard's reservations; resv keeps every one it
	// decided, for reads and retried requests, and seen counts the
	// desk's changes of the round already recorded.
	desk    *tickets.Desk
	resv    map[string]*tickets.Reservation
	seen    int
	secret  []byte      // the cluster's hold secret, in its partition
	changed [][2][]byte // the round's records: key, value (nil: deleted)
	// pays are the payments of the shard's reservations that have begun,
	// users the seats users claimed in limited events, by limitKey.
	pays  map[string]*payState
	users map[string]*tickets.SeatClaims
	// owed is what the round owes other partitions and waiting nodes.
	owed []engine.Forward
	// shards is the number of the cluster's partitions.
	shards int
}

// newTicketSlices loads the events, areas and reservations in db and hands
// each to the slice of the shard owning it.
func newTicketSlices(db *store.Store, shards int) ([]engine.Slice, error) {
	ts := make([]*ticketSlice, shards)
	out := make([]engine.Slice, shards)
	for i := range ts {
		s := &ticketSlice{events: map[string]*tickets.EventSpec{}, areas: map[string]*tkArea{}, resv: map[string]*tickets.Reservation{},
			pays: map[string]*payState{}, users: map[string]*tickets.SeatClaims{}, shards: shards}
		s.desk = tickets.NewDesk(s.decided)
		ts[i], out[i] = s, s
	}
	load := func(prefix []byte, fn func(id string, v []byte) error) error {
		return db.Scan(prefix, store.UpperBound(prefix), false, func(k, v []byte) (bool, error) {
			return true, fn(string(bytes.TrimPrefix(k, prefix)), v)
		})
	}
	err := load(tkEventPrefix, func(name string, v []byte) error {
		ev := &tickets.EventSpec{}
		ts[engine.ShardIndex(name, shards)].events[name] = ev
		return json.Unmarshal(v, ev)
	})
	if err == nil {
		err = load(tkAreaPrefix, func(key string, v []byte) error {
			var rec tkRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			if a := ts[engine.ShardIndex(key, shards)].addArea(key, &rec.Event, rec.Area); a != nil {
				a.currency = rec.Currency
			}
			return nil
		})
	}
	if err == nil {
		err = loadChains(db, ts, load)
	}
	if err == nil {
		err = load(tkResvPrefix, func(id string, v []byte) error {
			r := &tickets.Reservation{}
			if err := json.Unmarshal(v, r); err != nil {
				return err
			}
			ts[engine.ShardIndex(id, shards)].loadReservation(r)
			return nil
		})
	}
	if err == nil {
		err = loadSecret(db, ts[engine.ShardIndex(holdSecretKey, shards)])
	}
	for _, s := range ts {
		for id, p := range s.pays {
			if p.Paying {
				s.desk.LoadFrozen(id)
			}
		}
	}
	return out, err
}

// decided finds a reservation the slice decided, for the desk.
func (s *ticketSlice) decided(id string) (*tickets.Reservation, bool) {
	r, ok := s.resv[id]
	return r, ok
}

// loadSecret gives s the stored hold secret, if any.
func loadSecret(db *store.Store, s *ticketSlice) error {
	v, found, err := db.Get(tkSecretKey)
	if err != nil || !found {
		return err
	}
	return json.Unmarshal(v, &s.secret)
}

func (s *ticketSlice) addArea(key string, ev *tickets.EventSpec, id string) *tkArea {
	for _, as := range ev.Areas {
		if as.AreaID == id {
			a := &tkArea{event: ev, spec: as, seats: tickets.NewArea(as.RowCount, as.ColCount)}
			s.areas[key] = a
			return a
		}
	}
	return nil
}

// loadReservation puts a stored reservation back: its seats taken while it
// holds them, its hold to expire.
func (s *ticketSlice) loadReservation(r *tickets.Reservation) {
	s.resv[r.ID] = r
	a := s.areas[tickets.AreaKey(r.EventID, r.AreaID)]
	if a == nil || !r.HoldsSeats() {
		return
	}
	s.desk.Load(r, a.seats)
	if a.seats.Free() == 0 && r.UpdatedAt.After(a.soldOutAt) {
		a.soldOutAt = r.UpdatedAt
	}
}

// Apply applies the round's commands in order.
func (s *ticketSlice) Apply(cmds []engine.Command, now time.Time) {
	for _, c := range cmds {
		switch c := c.(type) {
		case engine.Tick:
			s.expire(now)
		case *ticketCommand:
			s.apply(c, now)
		}
	}
}

func (s *ticketSlice) apply(c *ticketCommand, now time.Time) {
	switch c.Op {
	case tkCreateEvent:
		if ev, ok := s.events[c.Event.EventName]; ok {
			c.Conflict = !ev.SameAs(c.Event)
			return
		}
		s.events[c.Event.EventName] = c.Event
		s.record(tkKey(tkEventPrefix, c.Event.EventName), c.Event)
		c.Created = true
	case tkGetEvent:
		c.Event, c.Found = s.events[c.ID], s.events[c.ID] != nil
	case tkCreateArea:
		key := tickets.AreaKey(c.Event.EventName, c.AreaID)
		if _, ok := s.areas[key]; ok {
			return
		}
		if a := s.addArea(key, c.Event, c.AreaID); a != nil {
			a.currency = c.Currency
			s.record(tkKey(tkAreaPrefix, key), tkRecord{Event: *c.Event, Area: c.AreaID, Currency: c.Currency})
		}
	case tkAreaFree:
		if a := s.areas[c.ID]; a != nil {
			c.Found, c.Free, c.SoldOutAt = true, a.seats.Free(), a.soldOutAt
		}
	case tkReserve:
		s.reserveLimited(c, now)
	case tkGet:
		c.Reservation = s.snapshot(c.ID)
	case tkCancel:
		s.cancel(c, now)
	case tkInspect:
		s.inspect(c)
	case tkSecret:
		if s.secret == nil {
			s.secret = c.Secret
			s.record(tkSecretKey, s.secret)
		}
		c.Secret = s.secret
	default:
		s.applyChain(c, now)
	}
}

// snapshot copies reservation id, nil if there is none: the outcome is
// encoded after the round, maybe during a Tick's.
func (s *ticketSlice) snapshot(id string) *tickets.Reservation {
	r, ok := s.resv[id]
	if !ok {
		return nil
	}
	cp := *r
	return &cp
}

// cancel gives a held reservation's seats back, as the single process
// does: cancelling a cancelled reservation is a replay; the desk refuses
// one that holds no seats, is paid or is being paid.
func (s *ticketSlice) cancel(c *ticketCommand, now time.Time) {
	r, ok := s.resv[c.ID]
	if ok && r.State != tickets.Cancelled {
		if _, err := s.desk.Cancel(c.ID, now); err != nil {
			c.Err = tickets.Refusal(r, err)
		}
		s.settle()
	}
	c.Reservation = s.snapshot(c.ID)
}

// inspect reads an area's seat map and the reservations holding its seats.
func (s *ticketSlice) inspect(c *ticketCommand) {
	a := s.areas[c.ID]
	if a == nil {
		return
	}
	out := &tickets.AreaSeats{Spec: a.spec, Available: a.seats.Free(), SeatMap: a.seats.SeatMap()}
	for _, r := range s.desk.Holders(a.seats) {
		out.Holders = append(out.Holders, *r)
	}
	c.Seats = out
}

// reserve decides a reservation on the desk; overLimit says its user's
// seat limit refused its claim.
func (s *ticketSlice) reserve(id, user string, req tickets.ReserveRequest, now time.Time, overLimit bool) *tickets.Reservation {
	var ev *tickets.EventSpec
	var seats *tickets.Area
	if a := s.areas[tickets.AreaKey(req.EventID, req.AreaID)]; a != nil {
		ev, seats = a.event, a.seats
	}
	r := s.desk.Reserve(ev, seats, tickets.NewReservation(id, user, req, now), now, overLimit)
	s.settle()
	return r
}

// expire ends the holds that ran out by now.
func (s *ticketSlice) expire(now time.Time) {
	s.desk.Expire(now)
	s.settle()
}

// settle records the reservations the desk decided or moved since the
// last call, refreshes their areas' sold-out times, and gives back the
// seat-limit claims of those that stopped holding seats (a failed one's
// claim is given back by reserveLimited, which knows whether it made one).
func (s *ticketSlice) settle() {
	changes := s.desk.Changes()
	for _, r := range changes[s.seen:] {
		s.resv[r.ID] = r
		s.record(tkKey(tkResvPrefix, r.ID), r)
		a := s.areas[tickets.AreaKey(r.EventID, r.AreaID)]
		if a == nil {
			continue
		}
		if a.seats.Free() > 0 {
			a.soldOutAt = time.Time{}
		} else if a.soldOutAt.IsZero() {
			a.soldOutAt = r.UpdatedAt
		}
		if (r.State == tickets.Cancelled || r.State == tickets.Expired) && a.event.PerUserSeatLimit > 0 {
			s.releaseClaim(r)
		}
	}
	s.seen = len(changes)
}

// record notes a record the round writes.
func (s *ticketSlice) record(key []byte, v any) {
	b, _ := json.Marshal(v) // tickets' plain data always encodes
	s.changed = append(s.changed, [2][]byte{key, b})
}

// forget notes a record the round deletes.
func (s *ticketSlice) forget(key []byte) {
	s.changed = append(s.changed, [2][]byte{key, nil})
}

// Size is the round's records.
func (s *ticketSlice) Size() int { return len(s.changed) }

// Receive has nothing to receive: areas never cross shards.
func (s *ticketSlice) Receive() {}

// Write adds the round's records to b.
func (s *ticketSlice) Write(b *pebble.Batch) {
	for _, kv := range s.changed {
		if kv[1] == nil {
			_ = b.Delete(kv[0], nil)
			continue
		}
		_ = b.Set(kv[0], kv[1], nil)
	}
}

// Publish has nothing to show: reads are commands.
func (s *ticketSlice) Publish(time.Time) {}

// Announce has nobody to tell.
func (s *ticketSlice) Announce() {}

// Forwards hands the round's owed commands and replies to the round's
// transaction (engine.Forwarder).
func (s *ticketSlice) Forwards(dst []engine.Forward) []engine.Forward {
	return append(dst, s.owed...)
}

// Finish forgets the round's records and asks a Tick for the next hold to
// end.
func (s *ticketSlice) Finish() time.Time {
	clear(s.changed)
	s.changed = s.changed[:0]
	clear(s.owed)
	s.owed = s.owed[:0]
	s.desk.Reset()
	s.seen = 0
	return s.desk.NextExpiry()
}
