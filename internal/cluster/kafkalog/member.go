package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Command is one command read from a partition of the commands topic.
type Command struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
}

// Kind says which topic an Output goes to.
type Kind uint8

// The kinds of a round's outputs.
const (
	// Reply goes to the replies topic, to the inbox partition of the node
	// that holds the client's connection.
	Reply Kind = iota
	// Change goes to the changelog topic, to the shard's own partition.
	Change
	// Forward goes to the commands topic: a command owed to another
	// partition, such as the credit of a cross-partition transfer.
	Forward
)

// Output is one record a round produces.
type Output struct {
	Kind      Kind
	Partition int32
	Key       []byte
	Value     []byte
	// From is, for a Reply or a Forward, the commands partition whose
	// round owes it: a round without a transaction (ChainMember) gives it
	// to its caller to send only once that partition's write counts.
	From int32
}

// Apply is a round's transform: it applies a batch of commands, in each
// partition's order, and returns the round's outputs. An error aborts the
// round; the same commands are read again.
type Apply func(ctx context.Context, batch []Command) ([]Output, error)

// Local hands a member's rounds the commands its node takes itself: those
// for partitions the member owns, which the node gives its own rounds
// instead of appending them to the commands topic. A round takes them
// beside the commands it polls, and applies and commits them the same way,
// with no offset of their own (Member.Takes, ChainMember.Takes).
type Local interface {
	// Waiting receives when commands may wait to be taken.
	Waiting() <-chan struct{}
	// Take returns up to max of the waiting commands, in order.
	Take(max int) []Command
}

// Handlers are told which commands partitions the member owns. They run on
// the group's goroutines, never concurrently with each other.
type Handlers struct {
	// Assigned is called with partitions the member now owns, before any of
	// their commands is read: the shard restores their state here.
	Assigned func(ctx context.Context, partitions []int32)
	// Revoked is called with partitions the member no longer owns, whether
	// given up in a rebalance, lost (the member was expelled from the
	// group) or left with its session (Member.renew): the shard drops
	// their state. It is called again for partitions it was told of
	// already (both franz-go and the member's own watch may report a
	// move).
	Revoked func(ctx context.Context, partitions []int32)
}

// RoundResult tells what a round did.
type RoundResult struct {
	// Commands is the number of commands the round read.
	Commands int
	// Outputs is the number of records it produced.
	Outputs int
	// Committed reports that its transaction committed. A round that read
	// commands and did not commit was aborted (its partitions were revoked
	// while it ran, or it was fenced): none of its outputs is visible to
	// read_committed readers, its commands will be read again by their
	// owner, and the caller must drop the state changes it made.
	Committed bool
	// Aborted reports that the round's transaction surely did not commit:
	// it never applied its commands (it read none, or failed before), it
	// was never asked to commit (its transform or its outputs failed), or
	// its End aborted it. A round that did not commit and was not aborted
	// ended with an error while committing: whether it committed is
	// unknown.
	Aborted bool
	// Changelog holds, for each changelog partition a committed round
	// wrote, the offset just after the last record it wrote there: a
	// local copy of the partition's state that took the round's changes
	// covers the changelog below that offset.
	Changelog map[int32]int64
}

// Member is a node's member of the cluster's consumer group: it owns some
// of the commands partitions and runs the rounds over them.
type Member struct {
	s   *kgo.GroupTransactSession
	cfg Config
	h   Handlers
	// opts build the session again (renew).
	opts []kgo.Opt
	// txnTimeout is the brokers' bound on a round's transaction, and the
	// round's own.
	txnTimeout time.Duration

	// g gathers the rounds' commands (poll.go).
	g poller
	// open is set while a round's transaction may still be open: from its
	// Begin until an End that returned without error (endLeftOpen).
	open bool
	// unsure is set by a round whose End failed: its transaction may have
	// committed (renewUnsure).
	unsure bool

	mu sync.Mutex
	// owned are the partitions the member owns (ownership.go).
	owned map[int32]bool
	// positioned are the owned partitions the group has a committed
	// offset for (Takes), as of the latest round's start or commit.
	positioned map[int32]bool
}

// Join makes node a member of the cluster's consumer group. node must be
// stable across the node's restarts and unique among the live nodes: Join
// initialises the node's transactional producer, which fences any former
// incarnation of the node (see Config.TransactionalID) before this one
// reads a command. opts are added last.
func Join(ctx context.Context, c Config, node string, h Handlers, opts ...kgo.Opt) (*Member, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if node == "" {
		return nil, errors.New("kafkalog: empty node id")
	}
	m := &Member{cfg: c, h: h, owned: map[int32]bool{}, positioned: map[int32]bool{}}
	base := append(append(c.SeedsFor("member"), producing()...), consuming(c)...)
	base = append(base,
		kgo.TransactionalID(c.TransactionalID(node)),
		kgo.Balancers(watch{kgo.CooperativeStickyBalancer(), m}),
		kgo.WithHooks(lossHook{m}),
		kgo.OnPartitionsAssigned(m.track(true)),
		kgo.OnPartitionsRevoked(m.track(false)),
		kgo.OnPartitionsLost(m.track(false)),
	)
	m.opts = append(base, opts...)
	if err := m.session(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// session starts the member's group session and initialises its
// transactional producer, which fences the node's former producers.
func (m *Member) session(ctx context.Context) error {
	s, err := kgo.NewGroupTransactSession(m.opts...)
	if err != nil {
		return fmt.Errorf("kafkalog: joining %s: %w", m.cfg.Group(), err)
	}
	if _, _, err := s.Client().ProducerID(ctx); err != nil {
		s.Close()
		return fmt.Errorf("kafkalog: initialising the member's producer: %w", err)
	}
	m.s = s
	m.g.cl = s.Client()
	m.txnTimeout = s.Client().OptValue(kgo.TransactionTimeout).(time.Duration)
	return nil
}

// renew leaves the group and joins it again with a new session, after a
// Begin failed: franz-go refuses every transaction of a producer whose
// id it holds for unrecoverable (under KIP-890's transactions, an
// INVALID_TXN_STATE or a bumped epoch after a broker's death), so only a
// new producer, initialised anew under the same transactional id, serves
// again. Leaving gives up every partition the member owns
// (Handlers.Revoked), so the node rebuilds its state for those the group
// gives it back.
func (m *Member) renew(ctx context.Context) error {
	m.s.Close()
	m.keepOnly(ctx, nil)
	m.open = false
	return m.session(ctx)
}

// Owned returns the commands partitions the member owns, in order.
func (m *Member) Owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.owned))
}

// Takes reports whether the member's rounds may take a local command for
// partition p: the member owns p and the group has a committed offset for
// it, which a round that took the command commits again (fenced). It
// answers as of the latest round's start or commit: Local.Take is where
// ownership is checked against the state the round applies to.
func (m *Member) Takes(p int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.positioned[p]
}

// position records which owned partitions have a committed offset.
func (m *Member) position() {
	committed := m.s.Client().CommittedOffsets()[m.cfg.CommandsTopic()]
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.positioned)
	for p := range committed {
		if m.owned[p] {
			m.positioned[p] = true
		}
	}
}

// Round runs one consume-transform-produce round: it waits for commands
// (until ctx ends), reads up to max of them (max+PackMax-1 at most: a
// packed record is never split), applies them and, in one
// transaction, writes the outputs and commits the consumer offsets. Rounds
// of one member must not run concurrently.
func (m *Member) Round(ctx context.Context, max int, apply Apply) (RoundResult, error) {
	return m.RoundWait(ctx, ctx, max, nil, apply)
}

// RoundWait is Round waiting for commands only until wait ends: a round
// with no commands then returns wait's error and nothing else. The round
// that found commands runs under ctx. A round also takes the commands of
// local (nil: none), before those it polls, up to max in all.
func (m *Member) RoundWait(wait, ctx context.Context, maxCommands int, local Local, apply Apply) (RoundResult, error) {
	m.g.begin(local)
	res, err := m.round(wait, ctx, maxCommands, apply)
	m.g.local = nil
	m.cfg.Meter.round(res)
	return res, err
}

// round is RoundWait.
func (m *Member) round(wait, ctx context.Context, maxCommands int, apply Apply) (RoundResult, error) {
	if m.unsure {
		return RoundResult{Aborted: true}, m.renewUnsure(ctx)
	}
	if err := m.endLeftOpen(ctx); err != nil {
		return RoundResult{}, err
	}
	m.position()
	batch, err := m.g.commands(wait, ctx, maxCommands)
	if err != nil || len(batch) == 0 {
		return RoundResult{Aborted: true}, err
	}
	res := RoundResult{Commands: len(batch)}
	if err := m.s.Begin(); err != nil {
		res.Aborted = true
		err = fmt.Errorf("kafkalog: beginning a round: %w", err)
		if rerr := m.renew(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return res, err
	}
	m.open = true
	// The brokers abort a transaction left open past its timeout, so the
	// round waits no longer than that for its work and its commit: after a
	// broker's death a flush or an EndTxn can wait far longer
	// (docs/CLUSTER.md, "The peer link"), and every command the node
	// holds would wait with it.
	ctx, cancel := context.WithTimeout(ctx, m.txnTimeout)
	defer cancel()
	outs, err := apply(ctx, batch)
	var changelog map[int32]int64
	if err == nil {
		changelog, err = m.produce(ctx, outs)
	}
	end := ctx
	if err == nil {
		end, err = m.fenced(ctx, changelog)
	}
	if err != nil {
		// No commit was asked for: the transaction never commits, whether
		// this abort ends it or the brokers' timeout does.
		res.Aborted = true
		if endErr := m.endLeftOpen(ctx); endErr != nil {
			return res, errors.Join(err, endErr)
		}
		return res, err
	}
	res.Outputs = len(outs)
	res.Committed, err = m.s.End(end, kgo.TryCommit)
	if errors.Is(err, errDisowned) {
		// End aborted the transaction: it returns the commit's error
		// only once its abort succeeded.
		err = nil
	}
	if err != nil {
		m.unsure = true
		return res, fmt.Errorf("kafkalog: ending a round: %w", err)
	}
	m.open = false
	res.Aborted = !res.Committed
	if res.Committed {
		res.Changelog = changelog
		m.position()
	}
	return res, nil
}

// renewUnsure renews the session after a round whose End failed. The
// round's EndTxn may have reached the coordinator before the round's
// context ended, so its transaction may have committed; franz-go rewinds
// the session to the offsets committed before the round all the same, and
// a member that went on reading would apply the round's commands again,
// once more than they committed (a transfer's credit twice). The new
// session's producer is initialised only once that transaction ended, and
// the group gives it the offsets as it left them. The round that renews
// reads nothing: the node rebuilds its state for the partitions the group
// gives the new session (renew).
func (m *Member) renewUnsure(ctx context.Context) error {
	if err := m.renew(ctx); err != nil {
		return fmt.Errorf("kafkalog: renewing the session after a round of unknown outcome: %w", err)
	}
	m.unsure = false
	return nil
}

// leftOpenAbortTime bounds endLeftOpen's abort; one that fails is tried
// again by the next round.
const leftOpenAbortTime = 10 * time.Second

// endLeftOpen aborts the transaction of a round that failed before it
// asked for a commit (one whose End failed renews the session instead:
// renewUnsure). The session refuses to begin a transaction while one is
// open: every later round would fail, for good. The abort runs under a
// context of its own, since the round's may be what ended; one that fails
// leaves the transaction open for the next round's call. It also rewinds
// the member to the last committed commands, which the next round reads
// again.
func (m *Member) endLeftOpen(ctx context.Context) error {
	if !m.open {
		return nil
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leftOpenAbortTime)
	defer cancel()
	if _, err := m.s.End(actx, kgo.TryAbort); err != nil {
		return fmt.Errorf("kafkalog: aborting a round's transaction: %w", err)
	}
	m.open = false
	return nil
}

// errNoPosition aborts a round that took local commands for partitions
// none of which has a committed offset left to commit again.
var errNoPosition = errors.New("kafkalog: no committed offset to fence a round's local commands with")

// errDisowned aborts a round that wrote the changelog of, or took local
// commands for, a partition the member no longer owns when the round's
// offsets commit.
var errDisowned = errors.New("kafkalog: a partition the round wrote moved")

// fenced returns the context of the round's End, which commits its
// transaction. The group coordinator takes the offsets a transaction
// commits only from a member of the group's current generation (KIP-447):
// a member expelled from the group, its partitions given to another,
// cannot commit. franz-go sends no offsets, and so asks the coordinator
// nothing, for a round that polled nothing; so the round commits again
// the offsets of the partitions whose local commands it took, at the
// position committed already, added to the request
// (kgo.PreTxnCommitFnContext). Should those partitions move, their new
// owner waits for the transaction to end before it reads their offsets
// (RequireStable), as for polled commands. The coordinator checks the
// member's generation, not which partitions it commits for: as the
// request is built, under the generation it carries, the round fails
// (errDisowned) if the member no longer owns a partition whose changelog
// it wrote (changelog) or whose local commands it took (ownership.go).
func (m *Member) fenced(ctx context.Context, changelog map[int32]int64) (context.Context, error) {
	touched := slices.Collect(maps.Keys(changelog))
	for p := range m.g.took {
		touched = append(touched, p)
	}
	if len(touched) == 0 {
		return ctx, nil
	}
	at, err := m.positions()
	if err != nil {
		return nil, err
	}
	return kgo.PreTxnCommitFnContext(ctx, func(req *kmsg.TxnOffsetCommitRequest) error {
		if p, ok := m.disowned(touched); ok {
			return fmt.Errorf("%w: partition %d", errDisowned, p)
		}
		m.commitAgain(req, at)
		return nil
	}), nil
}

// positions returns the committed offsets of the partitions whose local
// commands the round took, to commit again.
func (m *Member) positions() ([]kmsg.TxnOffsetCommitRequestTopicPartition, error) {
	if len(m.g.took) == 0 {
		return nil, nil
	}
	committed := m.s.Client().CommittedOffsets()[m.cfg.CommandsTopic()]
	var at []kmsg.TxnOffsetCommitRequestTopicPartition
	for _, p := range slices.Sorted(maps.Keys(m.g.took)) {
		if eo, ok := committed[p]; ok {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, eo.Offset, eo.Epoch
			at = append(at, rp)
		}
	}
	if len(at) == 0 {
		return nil, errNoPosition
	}
	return at, nil
}

// commitAgain adds the offsets at to req, but for partitions it commits
// already.
func (m *Member) commitAgain(req *kmsg.TxnOffsetCommitRequest, at []kmsg.TxnOffsetCommitRequestTopicPartition) {
	if len(at) == 0 {
		return
	}
	topic := m.cfg.CommandsTopic()
	i := slices.IndexFunc(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool { return t.Topic == topic })
	if i < 0 {
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = topic
		req.Topics, i = append(req.Topics, t), len(req.Topics)
	}
	t := &req.Topics[i]
	for _, rp := range at {
		if !slices.ContainsFunc(t.Partitions, func(q kmsg.TxnOffsetCommitRequestTopicPartition) bool { return q.Partition == rp.Partition }) {
			rp.Metadata = &req.MemberID
			t.Partitions = append(t.Partitions, rp)
		}
	}
}

// produce writes a round's outputs into the open transaction, in one
// request per broker, the forwards packed per partition (pack.go), and
// waits until every one is acknowledged. It returns, per changelog
// partition written, the offset after the last record written there.
func (m *Member) produce(ctx context.Context, outs []Output) (map[int32]int64, error) {
	records := make([]*kgo.Record, 0, len(outs))
	forwards := newPacker(m.cfg.CommandsTopic())
	ends := map[int32]*kgo.Record{}
	for _, o := range outs {
		switch o.Kind {
		case Forward:
			forwards.add(o.Partition, o.Key, o.Value)
			continue
		case Change:
		case Reply:
		default:
			return nil, fmt.Errorf("kafkalog: output of unknown kind %d", o.Kind)
		}
		r := &kgo.Record{Topic: m.topic(o.Kind), Partition: o.Partition, Key: o.Key, Value: o.Value}
		if o.Kind == Change {
			ends[o.Partition] = r
		}
		records = append(records, r)
	}
	for _, err := range produceAll(ctx, m.s.Client(), append(records, forwards.records...)) {
		return nil, fmt.Errorf("kafkalog: producing a round's outputs: %w", err)
	}
	offsets := make(map[int32]int64, len(ends))
	for p, r := range ends {
		offsets[p] = r.Offset + 1
	}
	return offsets, nil
}

func (m *Member) topic(k Kind) string {
	if k == Reply {
		return m.cfg.RepliesTopic()
	}
	return m.cfg.ChangelogTopic()
}

// Close leaves the group; the member's partitions move to the others.
func (m *Member) Close() { m.s.Close() }
