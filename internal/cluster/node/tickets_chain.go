package node

import (
	"encoding/json"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// Chains of ticket commands. Paying a reservation and reserving in an
// event with a per-user seat limit touch state in two partitions (the
// reservation's area and the payer's account, or the area and the user's
// seat count). Each is a chain of commands in which every step is applied
// by its partition's owner and forwards the next step in the same round
// transaction as its own effects, as a cross-partition credit is: a step
// is committed exactly once with what caused it, whichever node dies
// between steps, and the chain's last step answers the node that took the
// request (its reply address travels with the chain).

// replyAddr is where a node waits for an answer: its inbox partition and
// the request id the reply is keyed by.
type replyAddr struct {
	Inbox int32  `json:"inbox"`
	RID   string `json:"rid"`
}

// owedOutput is a record a ticket slice owes the round's transaction (a
// command forwarded to another partition, or a reply to a waiting node),
// passed to the committer as an engine.Forward's command.
type owedOutput struct{ out kafkalog.Output }

// forward owes partition the ticket command c.
func (s *ticketSlice) forward(partition int, c *ticketCommand) {
	s.owe(kafkalog.Output{Kind: kafkalog.Forward, Partition: int32(partition), Value: encodeTicket(c)})
}

// answer owes to a an answer: the outcome c.
func (s *ticketSlice) answer(a *replyAddr, c *ticketCommand) {
	if a == nil {
		return
	}
	s.owe(kafkalog.Output{Kind: kafkalog.Reply, Partition: a.Inbox, Key: []byte(a.RID), Value: encodeJSON(c)})
}

func (s *ticketSlice) owe(o kafkalog.Output) {
	s.owed = append(s.owed, engine.Forward{Shard: int(o.Partition), Cmd: owedOutput{out: o}})
}

// encodeTicket encodes c as a command of the tickets workload.
func encodeTicket(c *ticketCommand) []byte {
	b, _ := json.Marshal(c) // strings and bytes always encode
	return append([]byte{workloadTickets}, b...)
}

// ticketOutcome is c's reply, or nil if a later step of its chain answers.
func ticketOutcome(cmd engine.Command) []byte {
	if c, ok := cmd.(*ticketCommand); ok && c.deferred {
		return nil
	}
	return encodeJSON(cmd)
}

// addrOf is the reply address in a command's key, nil if it has none.
func addrOf(inbox int32, rid []byte) *replyAddr {
	if rid == nil {
		return nil
	}
	return &replyAddr{Inbox: inbox, RID: string(rid)}
}

// applyChain applies the steps of chains.
func (s *ticketSlice) applyChain(c *ticketCommand, now time.Time) {
	switch c.Op {
	case tkPay:
		s.pay(c, now)
	case tkPayEnd:
		s.payEnd(c, now)
	case tkClaim:
		s.claim(c)
	case tkRelease:
		s.unclaim(c.ID, limitKey(c.Req.EventID, c.User))
	}
}

// reserveLimited decides a reservation. In an event with a per-user seat
// limit, a reservation a node filed here goes first to its user's
// partition, which claims its seats and sends it back with the verdict
// (claim); the area's owner then decides it, answers the node (with the
// limit, which the node keeps), and gives the claim back if the
// reservation failed.
func (s *ticketSlice) reserveLimited(c *ticketCommand, now time.Time) {
	a := s.areas[tickets.AreaKey(c.Req.EventID, c.Req.AreaID)]
	limited := a != nil && a.event.PerUserSeatLimit > 0
	if limited && c.Claim == "" {
		if _, ok := s.desk.Decided(c.ID); !ok {
			s.forward(s.partitionOf(limitKey(c.Req.EventID, c.User)), &ticketCommand{
				Op: tkClaim, ID: c.ID, User: c.User, Req: c.Req, Limit: a.event.PerUserSeatLimit, ReplyTo: c.from,
			})
			c.deferred = true
			return
		}
	}
	_, known := s.desk.Decided(c.ID)
	r := s.reserve(c.ID, c.User, *c.Req, now, c.Claim == claimRefused)
	cp := *r
	c.Reservation = &cp
	if c.Claim == claimGranted && !known && !r.HoldsSeats() {
		s.releaseClaim(r) // an unknown area's too: its claim came from the node
	}
	if c.Claim != "" {
		s.answer(c.ReplyTo, c)
	}
}

// partitionOf is the partition of key, of as many as the engine's shards.
func (s *ticketSlice) partitionOf(key string) int { return engine.ShardIndex(key, s.shards) }

// loadChains loads the chains' state: payments begun and users' claims.
func loadChains(db *store.Store, ts []*ticketSlice, load func([]byte, func(string, []byte) error) error) error {
	shards := len(ts)
	err := load(tkPayPrefix, func(id string, v []byte) error {
		p := &payState{}
		ts[engine.ShardIndex(id, shards)].pays[id] = p
		return json.Unmarshal(v, p)
	})
	if err != nil {
		return err
	}
	return load(tkUserPrefix, func(key string, v []byte) error {
		u := &tickets.SeatClaims{}
		ts[engine.ShardIndex(key, shards)].users[key] = u
		return json.Unmarshal(v, u)
	})
}
