package rpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/wallet/social"
	"github.com/surge-dev/surge/internal/wallet/walletstore"
)

// In cluster mode (docs/CLUSTER.md, "The wallet in a cluster") the social
// state is a replicated state machine: every node holds all of it, and
// every change is an op appended to the cluster's social log, which every
// node applies in the log's order (Apply). An op carries what the caller
// asked for and the time it was asked, not its outcome: the outcome is
// decided when the op is applied, against the state the log's earlier ops
// made, with the same decisions the single node makes, so every node
// decides alike (a username taken, a message's number). The node that took
// the call answers once its own apply has reached the op. The ops are
// typed commands, binary on the wire (socialrecord.go).

// Replicator orders the social changes of a cluster's nodes
// (internal/cluster/sociallog.Log).
type Replicator interface {
	// Propose appends op to the social log and returns the value this
	// node's Apply returned for it.
	Propose(ctx context.Context, op []byte) (any, error)
	// Sync returns once this node has applied every op appended before
	// the call: a read that follows sees every change acknowledged
	// before it began, on any node.
	Sync(ctx context.Context) error
}

var errNoLog = connect.NewError(connect.CodeUnavailable, errors.New("the cluster's social log does not answer; try again"))

// sync makes the node's copy of the social state as new as the log was
// when the call began (Replicator.Sync); it does nothing on a single
// node.
func (s *Service) sync(ctx context.Context) error {
	if s.repl == nil {
		return nil
	}
	if err := s.repl.Sync(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("wallet: syncing with the social log", "err", err)
		return errNoLog
	}
	return nil
}

// outcome is what an op's apply decided, for the node that proposed it.
type outcome struct {
	err      error
	user     social.User
	rel      social.Relation
	msg      social.Message
	unread   uint64
	reminder social.Reminder
	replayed bool
}

// propose appends c and returns its outcome on this node.
func (s *Service) propose(ctx context.Context, c command) (outcome, error) {
	v, err := s.repl.Propose(ctx, encodeCommand(c))
	if err != nil {
		return outcome{}, s.internal("propose op", err)
	}
	out, _ := v.(outcome)
	return out, out.err
}

// Apply applies the social log's record at offset: it decides the op,
// writes its records and the offset in one batch of the node's store
// (without fsync: the log is the durable copy, and a lost tail is read
// again from the offset the store kept), then applies it in memory and
// tells the streams. It returns the op's outcome for Propose; an error
// means the node's store failed and the node can apply nothing more.
func (s *Service) Apply(offset int64, record []byte) (any, error) {
	c, err := decodeCommand(record)
	if err != nil {
		s.log.Error("wallet: undecodable social log record; skipped", "offset", offset, "err", err)
	}
	b := s.store.NewSocialBatch()
	s.mu.Lock()
	defer s.mu.Unlock()
	out, after, err := s.decideOp(c, b)
	if err != nil {
		return nil, err
	}
	b.PutApplied(offset)
	if err := s.store.CommitNoSync(b.Batch); err != nil {
		return nil, fmt.Errorf("wallet: applying social log record %d: %w", offset, err)
	}
	if after != nil {
		after()
	}
	return *out, nil
}

// Applied is the offset of the last social log record the store holds, -1
// if none.
func (s *Service) Applied() (int64, error) { return s.store.Applied() }

// decideOp decides c under the write lock and adds its records to b; after
// applies it in memory once b is written. A refusal is the outcome's err;
// the error returned is a fault of the store. A record that did not
// decode (c nil) changes nothing.
func (s *Service) decideOp(c command, b walletstore.SocialBatch) (out *outcome, after func(), err error) {
	switch o := c.(type) {
	case *registerOp:
		return s.applyRegister(o, b)
	case *relationOp:
		return s.applyRelation(o, b)
	case *textOp:
		m, err := s.state.NewText(o.Me, o.Peer, o.Text, o.At)
		if err != nil {
			return &outcome{err: socialError(err)}, nil, nil
		}
		b.PutMessage(&m)
		return &outcome{msg: m}, func() { s.publishLocked(m) }, nil
	case *markReadOp:
		return s.applyMarkRead(o, b)
	case *remindOp:
		return s.applyRemind(o, b)
	case *intentOp:
		b.PutTransferIntent(o.Transfer, o.At)
		return &outcome{}, nil, nil
	case *transferMsgOp:
		return s.applyTransferMessage(o, b)
	case *dropIntentOp:
		b.DeleteTransferIntent(o.Transfer)
		return &outcome{}, nil, nil
	case presenceCommand:
		return &outcome{}, func() { s.applyPresence(o) }, nil
	case *loginFailedOp:
		return &outcome{}, func() { s.limiter.FailedAt(o.Login, o.Addr, o.At) }, nil
	}
	return &outcome{err: errInternal}, nil, nil
}

func (s *Service) applyRegister(o *registerOp, b walletstore.SocialBatch) (*outcome, func(), error) {
	u, err := s.state.NewUser(o.User)
	if err != nil {
		return &outcome{err: socialError(err)}, nil, nil
	}
	b.PutUser(&u)
	return &outcome{user: u}, func() { s.state.AddUser(u) }, nil
}

func (s *Service) applyRelation(o *relationOp, b walletstore.SocialBatch) (*outcome, func(), error) {
	r, err := s.decideRelation(o.Action, o.Me, o.Peer, o.At)
	if err != nil {
		return &outcome{err: socialError(err)}, nil, nil
	}
	old, existed := s.state.Relation(o.Me, o.Peer)
	if existed && old == r || !existed && r.State == social.RelationNone {
		return &outcome{rel: r}, nil, nil
	}
	b.PutRelation(&r)
	return &outcome{rel: r}, func() {
		s.state.SetRelation(r)
		s.notify(o.Peer, &walletv1.Event{Event: &walletv1.Event_Friend{Friend: friendService{s}.friendLocked(o.Peer, o.Me, r)}})
	}, nil
}

func (s *Service) applyMarkRead(o *markReadOp, b walletstore.SocialBatch) (*outcome, func(), error) {
	me, peer := o.Me, o.Peer
	c, ok := s.state.Conversation(me, peer)
	if !ok || peer == me {
		return &outcome{err: connect.NewError(connect.CodeNotFound, errNoPeer(uint64(peer)))}, nil, nil
	}
	target, err := chatService{s}.readTarget(*c, o.UpTo)
	if err != nil {
		return &outcome{err: err}, nil, nil
	}
	mark, changed, err := s.state.MarkRead(me, peer, target)
	if err != nil {
		return &outcome{err: socialError(err)}, nil, nil
	}
	if !changed {
		return &outcome{unread: c.Unread(me)}, nil, nil
	}
	read := c.Read
	read[sideOf(c.Pair, me)] = mark
	b.PutHead(c.Pair, c.Last.Seq, read)
	out := &outcome{}
	return out, func() {
		s.state.SetReadMark(me, peer, mark)
		out.unread = c.Unread(me)
	}, nil
}

func (s *Service) applyRemind(o *remindOp, b walletstore.SocialBatch) (*outcome, func(), error) {
	prev, found, err := s.store.ReminderFor(o.Me, o.RequestID)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("wallet: read reminder: %w", err)
	case found && (prev.To != o.Peer || prev.Amount != o.Amount || prev.Text != o.Text):
		return &outcome{err: errReminderConflict()}, nil, nil
	case found:
		return &outcome{reminder: prev, replayed: true}, nil, nil
	}
	r, err := s.state.NewReminder(social.Reminder{
		ID: reminderID(o.Transfer), From: o.Me, To: o.Peer, Amount: o.Amount, Text: o.Text, At: o.At,
	})
	if err != nil {
		return &outcome{err: socialError(err)}, nil, nil
	}
	b.PutReminder(o.RequestID, &r)
	return &outcome{reminder: r}, func() {
		s.notify(r.To, &walletv1.Event{Event: &walletv1.Event_Reminder{Reminder: reminderPB(&r)}})
	}, nil
}

// applyTransferMessage writes a posted transfer's TRANSFER message unless
// an earlier op wrote it: the ops of one transfer may come more than once
// (a retried call, the sweep of intents), its message is written once.
func (s *Service) applyTransferMessage(o *transferMsgOp, b walletstore.SocialBatch) (*outcome, func(), error) {
	b.DeleteTransferIntent(o.Transfer)
	done, err := s.store.TransferMessaged(o.Transfer)
	if err != nil {
		return nil, nil, fmt.Errorf("wallet: read transfer %s's message: %w", o.Transfer, err)
	}
	if done {
		return &outcome{}, nil, nil
	}
	m := s.state.NewTransfer(o.Me, o.Peer, o.Amount, o.Transfer, o.Text, o.At)
	b.PutMessage(&m)
	b.PutTransferMessaged(o.Transfer)
	return &outcome{msg: m}, func() { s.publishLocked(m) }, nil
}

// The calls' side: each proposes its op and answers from the outcome.

func (s friendService) proposeRelation(me, peer social.UserID, a relAction, now time.Time) (*walletv1.Friend, error) {
	out, err := s.propose(context.Background(), &relationOp{At: now, Me: me, Peer: peer, Action: a})
	if err != nil {
		return nil, err
	}
	return s.friendOf(me, peer, out.rel), nil
}

func (s chatService) proposeText(ctx context.Context, me, to social.UserID, text string) (*walletv1.SendMessageResponse, error) {
	out, err := s.propose(ctx, &textOp{At: time.Now().UTC(), Me: me, Peer: to, Text: text})
	if err != nil {
		return nil, err
	}
	return &walletv1.SendMessageResponse{Message: messagePB(&out.msg)}, nil
}

func (s chatService) proposeMarkRead(ctx context.Context, me, peer social.UserID, upTo uint64) (*walletv1.MarkReadResponse, error) {
	out, err := s.propose(ctx, &markReadOp{Me: me, Peer: peer, UpTo: upTo})
	if err != nil {
		return nil, err
	}
	return &walletv1.MarkReadResponse{UnreadCount: out.unread}, nil
}

func (s walletService) proposeReminder(ctx context.Context, me social.UserID, m *walletv1.RemindTransferRequest) (*walletv1.RemindTransferResponse, error) {
	out, err := s.propose(ctx, &remindOp{payment: payment{
		At: time.Now().UTC(), Me: me, Peer: social.UserID(m.ToUserId), Amount: m.Amount, Text: m.Text,
		Transfer: transferID(me, m.RequestId),
	}, RequestID: m.RequestId})
	if err != nil {
		return nil, err
	}
	return &walletv1.RemindTransferResponse{Reminder: reminderPB(&out.reminder), Replayed: out.replayed}, nil
}

// proposeUser registers u, then opens the wallet of the id the log gave
// it. A front node that dies in between leaves the user without a wallet
// until they log in (ensureWallet).
func (s authService) proposeUser(ctx context.Context, u social.User) (social.User, error) {
	out, err := s.propose(ctx, &registerOp{User: u})
	if err != nil {
		return social.User{}, err
	}
	return out.user, s.ensureWallet(ctx, out.user.ID)
}

// ensureWallet opens user u's wallet if it is not open yet.
func (s *Service) ensureWallet(ctx context.Context, u social.UserID) error {
	spec := ledger.AccountSpec{ID: walletID(u), Currency: s.currency}
	_, _, err := s.ledger.CreateAccount(context.WithoutCancel(ctx), spec)
	if err != nil && ledger.CodeOf(err) != ledger.CodeAccountExists {
		return s.ledgerFailure("open wallet", err)
	}
	return nil
}

// transferReplicated submits req to the ledger between an intent and the
// transfer's message in the social log. A refusal drops the intent; a
// call that ends without an answer leaves it to ResolveIntents.
func (s *Service) transferReplicated(ctx context.Context, req ledger.TransferRequest, from, to social.UserID) (ledger.Transfer, bool, error) {
	if _, err := s.propose(ctx, &intentOp{At: time.Now().UTC(), Transfer: req.ID}); err != nil {
		return ledger.Transfer{}, false, err
	}
	t, replayed, err := s.ledger.TransferWith(ctx, req, nil)
	if err != nil {
		if code := ledger.CodeOf(err); code != "" && code != ledger.CodeOverloaded {
			_, _ = s.propose(ctx, &dropIntentOp{Transfer: req.ID})
		}
		return t, replayed, err
	}
	_, err = s.proposeTransferMessage(ctx, t, from, to)
	return t, replayed, err
}

func (s *Service) proposeTransferMessage(ctx context.Context, t ledger.Transfer, from, to social.UserID) (outcome, error) {
	return s.propose(ctx, &transferMsgOp{payment{At: t.CreatedAt, Me: from, Peer: to, Amount: t.Amount, Text: t.Memo, Transfer: t.ID}})
}

// ResolveIntents settles the transfer intents proposed before the given
// time whose calls did not (their front node died, or the ledger did not
// answer): a posted transfer gets its message, one the ledger does not
// have is dropped. Any node may settle any intent, more than once: a
// transfer's message is written once whatever the number of its ops.
func (s *Service) ResolveIntents(ctx context.Context, before time.Time) error {
	if err := s.sync(ctx); err != nil {
		return err
	}
	ids, err := s.store.TransferIntentsBefore(before)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.resolveIntent(ctx, id); err != nil {
			return fmt.Errorf("transfer %s: %w", id, err)
		}
	}
	return nil
}

// resolveIntent settles transfer id's intent, or leaves it for a later
// sweep if the ledger does not answer.
func (s *Service) resolveIntent(ctx context.Context, id string) error {
	t, err := s.ledger.GetTransfer(ctx, id)
	if err != nil && ledger.CodeOf(err) != ledger.CodeTransferNotFound {
		return nil
	}
	from, okFrom := walletOwner(t.From)
	to, okTo := walletOwner(t.To)
	if err == nil && t.State == ledger.StatePosted && okFrom && okTo {
		_, err = s.proposeTransferMessage(ctx, t, from, to)
		return err
	}
	_, err = s.propose(ctx, &dropIntentOp{Transfer: id})
	return err
}
