package walletstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/store"
)

// Records of the social state a cluster node applies from the cluster's
// social log (internal/cluster/sociallog), beside the keys above:
//
//	so/applied                 the offset of the last log record applied
//	si/<transfer>              a transfer intent, its value the time it was
//	                           proposed (8-byte big-endian Unix nanoseconds)
//	sd/<transfer>              the transfer's TRANSFER message is written
var (
	keyApplied         = []byte("so/applied")
	prefixTransferDone = []byte("sd/")
)

// PutApplied records that the log's records up to offset are applied; it
// is written in the batch of that record's changes.
func (b SocialBatch) PutApplied(offset int64) {
	_ = b.Set(keyApplied, binary.BigEndian.AppendUint64(nil, uint64(offset)), nil)
}

// Applied returns the offset of the last social log record applied, or
// -1 if none was.
func (s Store) Applied() (int64, error) {
	v, ok, err := s.Get(keyApplied)
	switch {
	case err != nil || !ok:
		return -1, err
	case len(v) != 8:
		return -1, fmt.Errorf("applied offset %x: %w", v, codec.ErrCorrupt)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// PutTransferIntent records that transfer id was proposed at at and its
// chat message is still to be written.
func (b SocialBatch) PutTransferIntent(id string, at time.Time) {
	_ = b.Set(TransferIntentKey(id), binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), nil)
}

// TransferIntentsBefore lists the transfer intents proposed before t, by
// transfer id.
func (s Store) TransferIntentsBefore(t time.Time) ([]string, error) {
	var ids []string
	err := s.Scan(prefixIntent, store.UpperBound(prefixIntent), false, func(k, v []byte) (bool, error) {
		if len(v) == 8 && int64(binary.BigEndian.Uint64(v)) < t.UnixNano() {
			ids = append(ids, string(k[len(prefixIntent):]))
		}
		return true, nil
	})
	return ids, err
}

// PutTransferMessaged records that transfer id's TRANSFER message is
// written.
func (b SocialBatch) PutTransferMessaged(id string) {
	_ = b.Set(store.Key(nil, prefixTransferDone, id), nil, nil)
}

// TransferMessaged reports whether transfer id's TRANSFER message is
// written.
func (s Store) TransferMessaged(id string) (bool, error) {
	_, ok, err := s.Get(store.Key(nil, prefixTransferDone, id))
	return ok, err
}
