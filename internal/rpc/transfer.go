package rpc

import (
	"context"
	"fmt"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/social"
	"github.com/surge-dev/surge/internal/store"
)

// A transfer and its TRANSFER chat message are two writes: the ledger's
// and the social store's. The invariant that ties them:
//
//	Once surge reports ready, every posted ledger transfer between two
//	wallets that the wallet service submitted has exactly one TRANSFER
//	message in the pair's conversation.
//
// It holds by an intent record, si/<transfer id>, that the ledger writes
// in the same durable batch as the transfer, and only if the call made the
// transfer anew (engine.TransferMarked): a replay, a conflict or a refusal
// writes none. After the ledger acknowledges, the message is appended and
// the intent deleted in one batch, without fsync: if a crash loses it, the
// intent survives, as the log loses only a suffix. On start,
// recoverTransfers writes the message of every intent left. The message
// carries the ledger transfer's own fields, so it reads the same whichever
// path wrote it. The calls of one transfer id are serialised, so a retry
// is answered only once the first call's message is written.

// transfer submits req to the ledger and writes its chat message.
func (s *Service) transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	unlock := s.transfers.lock(req.ID)
	defer unlock()
	// The ledger goes on with a command once it is queued, whether or not
	// the caller waits: wait for the outcome regardless, so the message
	// is written now rather than at the next start.
	t, replayed, err := s.ledger.TransferMarked(context.WithoutCancel(ctx), req, store.TransferIntentKey(req.ID))
	if err != nil || replayed {
		return t, replayed, err
	}
	return t, false, s.appendTransferMessage(t)
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

// recoverTransfers resolves the intents a crash left (see above). An
// intent without a posted transfer is dropped: data written before intents
// went into the ledger's batch held intents of transfers never made.
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
