package rpc

import (
	"context"
	"fmt"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/social"
)

// A transfer and its TRANSFER chat message are two writes: the ledger's
// and the social store's. The invariant that ties them:
//
//	Once surge reports ready, every posted ledger transfer between two
//	wallets that the wallet service submitted has exactly one TRANSFER
//	message in the pair's conversation.
//
// It holds by an intent record. Before a new transfer goes to the ledger,
// si/<transfer id> is written without fsync; the ledger's own synced
// commit comes later in the same write-ahead log, so the intent is durable
// whenever the transfer is. After the ledger acknowledges, the message is
// appended and the intent deleted in one batch (also without fsync: if a
// crash loses it, the intent survives, as the log loses only a suffix). On
// start, recoverTransfers resolves every intent left: if the ledger has
// the transfer, its message is appended; if not, the transfer never
// committed and the intent is dropped. The message carries the ledger
// transfer's own fields, so it reads the same whichever path wrote it.
//
// A transfer id already in the ledger is a replay (or a conflict) and gets
// no intent and no message; the calls of one transfer id are serialised,
// so no two calls write the message of one transfer.

// transfer submits req to the ledger and writes its chat message.
func (s *Service) transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	unlock := s.transfers.lock(req.ID)
	defer unlock()
	_, err := s.ledger.GetTransfer(ctx, req.ID)
	switch {
	case err == nil:
		return s.ledger.Transfer(ctx, req) // replay or conflict, decided by the ledger
	case ledger.CodeOf(err) != ledger.CodeTransferNotFound:
		return ledger.Transfer{}, false, err
	}
	b := s.store.NewSocialBatch()
	b.PutTransferIntent(req.ID)
	if err := s.store.CommitNoSync(b.Batch); err != nil {
		return ledger.Transfer{}, false, err
	}
	// The ledger goes on with a command once it is queued, whether or not
	// the caller waits: wait for the outcome regardless, so the intent is
	// resolved now rather than at the next start.
	t, replayed, err := s.ledger.Transfer(context.WithoutCancel(ctx), req)
	if err != nil || replayed {
		return t, replayed, firstError(err, s.dropIntent(req.ID))
	}
	return t, false, s.appendTransferMessage(t)
}

// firstError returns the first non-nil error: the ledger's refusal matters
// more to the caller than a failure to clean up after it.
func firstError(first, second error) error {
	if first != nil {
		return first
	}
	return second
}

func (s *Service) dropIntent(id string) error {
	b := s.store.NewSocialBatch()
	b.DeleteTransferIntent(id)
	return s.store.CommitNoSync(b.Batch)
}

// appendTransferMessage writes the TRANSFER message of a committed
// transfer and clears its intent.
func (s *Service) appendTransferMessage(t ledger.Transfer) error {
	from, okFrom := walletOwner(t.From)
	to, okTo := walletOwner(t.To)
	if !okFrom || !okTo {
		return fmt.Errorf("transfer %s is not between two wallets", t.ID)
	}
	unlock := s.pairs.lock(social.PairOf(from, to))
	defer unlock()
	s.mu.RLock()
	m := s.state.NewTransfer(from, to, t.Amount, t.ID, t.Memo, t.CreatedAt)
	read := s.readMarks(from, to)
	s.mu.RUnlock()
	b := s.store.NewSocialBatch()
	b.PutMessage(&m, read)
	b.DeleteTransferIntent(t.ID)
	if err := s.store.CommitNoSync(b.Batch); err != nil {
		return err
	}
	s.publish(m)
	return nil
}

// readMarks returns the read marks of a pair's conversation; it runs under
// the read lock.
func (s *Service) readMarks(a, b social.UserID) [2]social.ReadMark {
	if c, ok := s.state.Conversation(a, b); ok {
		return c.Read
	}
	return [2]social.ReadMark{}
}

// recoverTransfers resolves the intents a crash left (see above).
func (s *Service) recoverTransfers(ctx context.Context) error {
	ids, err := s.store.TransferIntents()
	if err != nil {
		return err
	}
	for _, id := range ids {
		t, err := s.ledger.GetTransfer(ctx, id)
		switch {
		case err == nil && t.State == ledger.StatePosted:
			err = s.appendTransferMessage(t)
		case err == nil || ledger.CodeOf(err) == ledger.CodeTransferNotFound:
			err = s.dropIntent(id)
		}
		if err != nil {
			return fmt.Errorf("transfer %s: %w", id, err)
		}
	}
	if len(ids) > 0 {
		s.log.Info("wallet: resolved interrupted transfers", "count", len(ids))
	}
	return nil
}
