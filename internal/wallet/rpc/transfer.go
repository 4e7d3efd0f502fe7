package rpc

import (
	"context"
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/social"
	"github.com/surge-dev/surge/internal/wallet/walletstore"
)

// A transfer and its TRANSFER chat message are written together when
// they can be: the message and, if it opens the conversation, its head
// ride in the ledger's durable batch of the transfer
// (engine.TransferWith), and only if the call made the transfer anew; a
// replay, a conflict or a refusal writes none. The message is numbered
// before the transfer is submitted, so the pair's conversation stays
// locked until the ledger answers.
//
// Concurrent transfers between the same two users would so wait for each
// other's commits, one fsync each. A call that finds the pair locked
// instead writes an intent record, si/<transfer id>, with its transfer,
// and once the ledger answers appends the message and deletes the intent
// in one batch, without fsync: if a crash loses that batch, the intent
// survives, as the log loses only a suffix, and recoverTransfers writes
// the message of every intent left on start. Either way:
//
//	Once surge reports ready, every posted ledger transfer between two
//	wallets that the wallet service submitted has exactly one TRANSFER
//	message in the pair's conversation.
//
// The calls of one transfer id are serialised, so a retry is answered
// only once the first call's message is published.
//
// A message written with its transfer is dated when the call numbers it,
// a moment before the ledger dates the transfer; one written after takes
// the transfer's own date.

// transfer submits req to the ledger and writes its chat message.
func (s *Service) transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	from, okFrom := walletOwner(req.From)
	to, okTo := walletOwner(req.To)
	if !okFrom || !okTo {
		return ledger.Transfer{}, false, fmt.Errorf("transfer %s is not between two wallets", req.ID)
	}
	unlock := s.transfers.lock(req.ID)
	defer unlock()
	// The ledger goes on with a command once it is queued, whether or not
	// the caller waits: wait for the outcome regardless, so the message is
	// written now rather than at the next start.
	ctx = context.WithoutCancel(ctx)
	if s.repl != nil {
		return s.transferReplicated(ctx, req, from, to)
	}
	if unlockPair, ok := s.pairs.tryLock(social.PairOf(from, to)); ok {
		defer unlockPair()
		return s.transferWithMessage(ctx, req, from, to)
	}
	t, replayed, err := s.ledger.TransferWith(ctx, req, []store.Record{{Key: walletstore.TransferIntentKey(req.ID)}})
	if err != nil || replayed {
		return t, replayed, err
	}
	return t, false, s.appendTransferMessage(t)
}

// transferWithMessage submits req with its message; the pair's lock is
// held.
func (s *Service) transferWithMessage(ctx context.Context, req ledger.TransferRequest, from, to social.UserID) (ledger.Transfer, bool, error) {
	s.mu.RLock()
	m := s.state.NewTransfer(from, to, req.Amount, req.ID, req.Memo, time.Now().UTC())
	s.mu.RUnlock()
	t, replayed, err := s.ledger.TransferWith(ctx, req, walletstore.MessageRecords(&m))
	if err != nil || replayed {
		return t, replayed, err
	}
	s.publish(m)
	return t, false, nil
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
	s.mu.RUnlock()
	b := s.store.NewSocialBatch()
	b.PutMessage(&m)
	b.DeleteTransferIntent(t.ID)
	if err := s.store.CommitNoSync(b.Batch); err != nil {
		return err
	}
	s.publish(m)
	return nil
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
