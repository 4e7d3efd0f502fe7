package ticketengine

import (
	"bytes"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketstore"
)

// Ticketing in a cluster (internal/cluster, docs/CLUSTER.md). An event's
// spec lives in the partition its name hashes to, each of its areas in the
// partition of the area's key (tickets.AreaKey), with the seat map and
// every reservation of the area: that partition's owner alone decides the
// area's reservations, on the same tickets.Desk a single process's shard
// runs, so no seat is sold twice. A reservation's id is chosen so that it
// hashes to its area's partition, where any node reads, cancels or pays
// it. Holds expire on the owner's Ticks. Paying (cluster_pay.go) and
// per-user seat limits (cluster_limit.go) are chains of commands, each
// owed in its sender's round's write (engine.Forwarder). The
// cluster's hold secret (which signs reservations' hold tokens on every
// node) is kept in the partition of HoldSecretKey, chosen by the first
// node that asks.
//
// The node that owns a partition feeds it the commands of wire.go and
// sends back their outcomes; this file is what it runs: the slices
// (AttachCluster), nothing about Kafka.

// HoldSecretKey is the partitioning key of the cluster's hold secret.
const HoldSecretKey = "surge hold secret"

// clusterArea is an area on its owner.
type clusterArea struct {
	event     *tickets.EventSpec
	spec      tickets.AreaSpec
	currency  string // the organizer's
	seats     *tickets.Area
	soldOutAt time.Time
	index     uint32 // in its shard's areaList
}

// clusterShard is the events, areas and reservations of one partition on
// its owner: ticketing's engine.Slice in a cluster.
type clusterShard struct {
	events map[string]*tickets.EventSpec
	areas  map[string]*clusterArea
	// desk decides the shard's reservations; resv keeps every one it
	// decided, for reads and retried requests (reservation), but the
	// sold-out failures, kept in soldOut as the single process keeps them
	// (outcomes.go), their users in soldOutUsers, their areas numbered
	// in areaList; seen counts the desk's changes of the round already
	// recorded.
	desk         *tickets.Desk
	resv         map[string]*tickets.Reservation
	soldOut      map[uuid.UUID]soldOut
	soldOutUsers []byte
	areaList     []*clusterArea
	seen         int
	secret       []byte      // the cluster's hold secret, in its partition
	changed      [][2][]byte // the round's records: key, value (nil: deleted)
	// pays are the payments of the shard's reservations that have begun,
	// users the seats users claimed in limited events, by LimitKey.
	pays  map[string]*payState
	users map[string]*tickets.SeatClaims
	// owed is what the round owes other partitions and waiting nodes.
	owed []engine.Forward
	// shards is the number of the cluster's partitions.
	shards int
}

// AttachCluster loads the events, areas and reservations in eng's store,
// hands each to the slice of the shard owning it, and attaches the slices
// to eng, whose Committer carries what they owe (engine.Forwarder): Reply
// records, Commands for other partitions and payments' Debits.
func AttachCluster(eng *engine.Engine) (*engine.Port, error) {
	slices, err := clusterSlices(eng.Store(), eng.Shards())
	if err != nil {
		return nil, err
	}
	return eng.Attach(slices), nil
}

// clusterSlices loads db's ticketing into shards slices.
func clusterSlices(db *store.Store, shards int) ([]engine.Slice, error) {
	ts := make([]*clusterShard, shards)
	out := make([]engine.Slice, shards)
	for i := range ts {
		s := &clusterShard{events: map[string]*tickets.EventSpec{}, areas: map[string]*clusterArea{}, resv: map[string]*tickets.Reservation{},
			soldOut: map[uuid.UUID]soldOut{}, pays: map[string]*payState{}, users: map[string]*tickets.SeatClaims{}, shards: shards}
		s.desk = tickets.NewDesk(s.decided)
		ts[i], out[i] = s, s
	}
	shard := func(key string) *clusterShard { return ts[engine.ShardIndex(key, shards)] }
	err := loadRecords(db, tkEventPrefix, ticketstore.DecodeEvent, func(name string, ev tickets.EventSpec) {
		shard(name).events[name] = &ev
	})
	if err == nil {
		err = loadRecords(db, tkAreaPrefix, decodeArea, func(key string, rec areaRecord) {
			if a := shard(key).addArea(key, &rec.event, rec.area); a != nil {
				a.currency = rec.currency
			}
		})
	}
	if err == nil {
		err = loadRecords(db, tkPayPrefix, decodePay, func(id string, p *payState) { shard(id).pays[id] = p })
	}
	if err == nil {
		err = loadRecords(db, tkUserPrefix, decodeClaims, func(key string, u *tickets.SeatClaims) { shard(key).users[key] = u })
	}
	if err == nil {
		err = loadRecords(db, tkResvPrefix, ticketstore.DecodeReservation, func(id string, r *tickets.Reservation) { shard(id).loadReservation(r) })
	}
	if err == nil {
		err = loadRecords(db, tkSecretKey, func(b []byte) ([]byte, error) { return bytes.Clone(b), nil }, func(_ string, secret []byte) {
			shard(HoldSecretKey).secret = secret
		})
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

// decided finds a reservation the shard decided, for the desk.
func (s *clusterShard) decided(id string) (*tickets.Reservation, bool) { return s.reservation(id) }

// reservation finds reservation id: a sold-out failure is rebuilt, the
// others are the shard's own, which only the desk changes.
func (s *clusterShard) reservation(id string) (*tickets.Reservation, bool) {
	if r, ok := s.resv[id]; ok || len(s.soldOut) == 0 {
		return r, ok
	}
	uid, ok := canonicalID(id)
	if !ok {
		return nil, false
	}
	f, ok := s.soldOut[uid]
	if !ok {
		return nil, false
	}
	a := s.areaList[f.area]
	return f.reservation(id, s.soldOutUsers, a.event.EventName, a.spec.AreaID), true
}

// canonicalID is id as a UUID if id is its canonical spelling: the
// shard's reservations are keyed by their ids' text, and Parse takes
// other spellings of an id too.
func canonicalID(id string) (uuid.UUID, bool) {
	uid, err := uuid.Parse(id)
	return uid, err == nil && uid.String() == id
}

// keep keeps decided reservation r of area a (nil if unknown) for reads
// and retried requests: a sold-out failure compactly, out of the GC's
// sight, since a flash sale leaves hundreds of thousands.
func (s *clusterShard) keep(r *tickets.Reservation, a *clusterArea) {
	if a != nil && compactable(r, a.event.EventName, a.spec.AreaID) {
		if uid, ok := canonicalID(r.ID); ok {
			delete(s.resv, r.ID)
			s.soldOut[uid] = newSoldOut(r, a.index, &s.soldOutUsers)
			return
		}
	}
	s.resv[r.ID] = r
}

func (s *clusterShard) addArea(key string, ev *tickets.EventSpec, id string) *clusterArea {
	as, ok := ev.Area(id)
	if !ok {
		return nil
	}
	a := &clusterArea{event: ev, spec: as, seats: tickets.NewArea(as.RowCount, as.ColCount), index: uint32(len(s.areaList))}
	s.areas[key] = a
	s.areaList = append(s.areaList, a)
	return a
}

// loadReservation puts a stored reservation back: its seats taken while it
// holds them, its hold to expire.
func (s *clusterShard) loadReservation(r *tickets.Reservation) {
	a := s.areas[tickets.AreaKey(r.EventID, r.AreaID)]
	s.keep(r, a)
	if a == nil || !r.HoldsSeats() {
		return
	}
	s.desk.Load(r, a.seats)
	if a.seats.Free() == 0 && r.UpdatedAt.After(a.soldOutAt) {
		a.soldOutAt = r.UpdatedAt
	}
}

// SetReplyTo gives cmd, a decoded command, the reply address of the
// client's command that carried it (its key), for a chain's later step
// to answer.
func SetReplyTo(cmd engine.Command, to []byte) {
	switch c := cmd.(type) {
	case *Reserve:
		c.from = to
	case *Pay:
		c.from = to
	case *Claim:
		c.from = to
	}
}

// Outcome encodes an applied command's outcome for its sender; nil if a
// later step of its chain answers.
func Outcome(cmd engine.Command) []byte {
	switch c := cmd.(type) {
	case *Reserve:
		if c.deferred {
			return nil
		}
	case *Pay:
		if c.deferred {
			return nil
		}
	case *Claim:
		return nil
	}
	return EncodeOutcome(cmd.(Command))
}

// Apply applies the round's commands in order.
func (s *clusterShard) Apply(cmds []engine.Command, now time.Time) {
	for _, c := range cmds {
		switch c := c.(type) {
		case engine.Tick:
			s.desk.Expire(now)
			s.settle()
		case Command:
			s.apply(c, now)
		}
	}
}

func (s *clusterShard) apply(c Command, now time.Time) {
	switch c := c.(type) {
	case *CreateEvent:
		s.createEvent(c)
	case *ReadEvent:
		c.Spec = s.events[c.Name]
	case *CreateArea:
		s.createArea(c)
	case *AreaFree:
		if a := s.areas[tickets.AreaKey(c.Event, c.Area)]; a != nil {
			c.Found, c.Free, c.SoldOutAt = true, a.seats.Free(), a.soldOutAt
		}
	case *Reserve:
		s.reserveLimited(c, now)
	case *ReadReservation:
		c.Reservation = s.snapshot(c.ID)
	case *Cancel:
		s.cancel(c, now)
	case *Inspect:
		s.inspect(c)
	case *HoldSecret:
		if s.secret == nil && len(c.Proposed) > 0 {
			s.secret = c.Proposed
			s.record(tkSecretKey, s.secret)
		}
		c.Secret = s.secret
	case *Pay:
		s.pay(c, now)
	case *PayEnd:
		s.payEnd(c, now)
	case *Claim:
		s.claim(c)
	case *Release:
		s.unclaim(c.ID, LimitKey(c.Event, c.User))
	}
}

func (s *clusterShard) createEvent(c *CreateEvent) {
	if ev, ok := s.events[c.Spec.EventName]; ok {
		c.Conflict = !ev.SameAs(&c.Spec)
		return
	}
	ev := c.Spec
	s.events[ev.EventName] = &ev
	s.record(tkKey(tkEventPrefix, ev.EventName), ticketstore.AppendEvent(nil, &ev))
	c.Created = true
}

func (s *clusterShard) createArea(c *CreateArea) {
	key := tickets.AreaKey(c.Spec.EventName, c.Area)
	if _, ok := s.areas[key]; ok {
		return
	}
	ev := c.Spec
	if a := s.addArea(key, &ev, c.Area); a != nil {
		a.currency = c.Currency
		s.record(tkKey(tkAreaPrefix, key), encodeArea(&ev, c.Area, c.Currency))
	}
}

// snapshot copies reservation id, nil if there is none: the outcome is
// encoded after the round, maybe during a Tick's.
func (s *clusterShard) snapshot(id string) *tickets.Reservation {
	r, ok := s.reservation(id)
	if !ok {
		return nil
	}
	cp := *r
	return &cp
}

// cancel gives a held reservation's seats back, as the single process
// does: cancelling a cancelled reservation is a replay; the desk refuses
// one that holds no seats, is paid or is being paid.
func (s *clusterShard) cancel(c *Cancel, now time.Time) {
	r, ok := s.reservation(c.ID)
	if ok && r.State != tickets.Cancelled {
		if _, err := s.desk.Cancel(c.ID, now); err != nil {
			c.Err = tickets.Refusal(r, err)
		}
		s.settle()
	}
	c.Reservation = s.snapshot(c.ID)
}

// inspect reads an area's seat map and the reservations holding its seats.
func (s *clusterShard) inspect(c *Inspect) {
	a := s.areas[tickets.AreaKey(c.Event, c.Area)]
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
func (s *clusterShard) reserve(id, user string, req tickets.ReserveRequest, now time.Time, overLimit bool) *tickets.Reservation {
	var ev *tickets.EventSpec
	var seats *tickets.Area
	if a := s.areas[tickets.AreaKey(req.EventID, req.AreaID)]; a != nil {
		ev, seats = a.event, a.seats
	}
	r := s.desk.Reserve(ev, seats, tickets.NewReservation(id, user, req, now), now, overLimit)
	s.settle()
	return r
}

// settle records the reservations the desk decided or moved since the
// last call, refreshes their areas' sold-out times, and gives back the
// seat-limit claims of those that stopped holding seats (a failed one's
// claim is given back by reserveLimited, which knows whether it made one).
func (s *clusterShard) settle() {
	changes := s.desk.Changes()
	for _, r := range changes[s.seen:] {
		a := s.areas[tickets.AreaKey(r.EventID, r.AreaID)]
		s.keep(r, a)
		s.record(tkKey(tkResvPrefix, r.ID), ticketstore.AppendReservation(nil, r))
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
func (s *clusterShard) record(key, value []byte) {
	s.changed = append(s.changed, [2][]byte{key, value})
}

// forget notes a record the round deletes.
func (s *clusterShard) forget(key []byte) {
	s.changed = append(s.changed, [2][]byte{key, nil})
}

// forward owes partition the command c.
func (s *clusterShard) forward(partition int, c Command) {
	s.owed = append(s.owed, engine.Forward{Shard: partition, Cmd: c})
}

// answer owes the node waiting at to c's outcome.
func (s *clusterShard) answer(to []byte, c Command) {
	if to != nil {
		s.owed = append(s.owed, engine.Forward{Cmd: &ledgerengine.Reply{To: to, Value: EncodeOutcome(c)}})
	}
}

// partitionOf is the partition of key, of as many as the engine's shards.
func (s *clusterShard) partitionOf(key string) int { return engine.ShardIndex(key, s.shards) }

// Size is the round's records.
func (s *clusterShard) Size() int { return len(s.changed) }

// Receive has nothing to receive: areas never cross shards.
func (s *clusterShard) Receive() {}

// Write adds the round's records to b.
func (s *clusterShard) Write(b *pebble.Batch) {
	for _, kv := range s.changed {
		if kv[1] == nil {
			_ = b.Delete(kv[0], nil)
			continue
		}
		_ = b.Set(kv[0], kv[1], nil)
	}
}

// Publish has nothing to show: reads are commands.
func (s *clusterShard) Publish(time.Time) {}

// Announce has nobody to tell.
func (s *clusterShard) Announce() {}

// Forwards hands the round's owed commands and replies to the round's
// write (engine.Forwarder).
func (s *clusterShard) Forwards(dst []engine.Forward) []engine.Forward {
	return append(dst, s.owed...)
}

// Finish forgets the round's records and asks a Tick for the next hold to
// end.
func (s *clusterShard) Finish() time.Time {
	clear(s.changed)
	s.changed = s.changed[:0]
	clear(s.owed)
	s.owed = s.owed[:0]
	s.desk.Reset()
	s.seen = 0
	return s.desk.NextExpiry()
}
