package walletstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

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

// A cluster node's snapshot of its social state (internal/cluster/sociallog)
// holds every social key but the node's own under sk/: its name and
// secrets stay with the node.
var (
	socialLower  = []byte("s")
	socialUpper  = store.UpperBound(socialLower)
	prefixOwn    = []byte("sk/")
	ownUpper     = store.UpperBound(prefixOwn)
	snapshotSpan = [][2][]byte{{socialLower, prefixOwn}, {ownUpper, socialUpper}}
)

// replaceBatchBytes bounds a batch of ReplaceSocial.
const replaceBatchBytes = 4 << 20

// SocialView is a consistent view of the social state a snapshot holds.
type SocialView struct{ it *pebble.Iterator }

// SocialView returns a view of the social state as it stands. The caller
// closes it.
func (s Store) SocialView() (*SocialView, error) {
	it, err := s.NewIter(&pebble.IterOptions{LowerBound: socialLower, UpperBound: socialUpper})
	if err != nil {
		return nil, err
	}
	return &SocialView{it: it}, nil
}

// Each calls fn for each pair of the view, in key order.
func (v *SocialView) Each(fn func(key, value []byte) error) error {
	for ok := v.it.First(); ok; ok = v.it.Next() {
		if bytes.HasPrefix(v.it.Key(), prefixOwn) {
			continue
		}
		val, err := v.it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := fn(v.it.Key(), val); err != nil {
			return err
		}
	}
	return v.it.Error()
}

// Close releases the view.
func (v *SocialView) Close() error { return v.it.Close() }

// ReplaceSocial replaces the social state a snapshot holds with the pairs
// each passes to put. The applied offset is written last, in the last
// batch: a crash midway leaves a store without one, which starts again
// from a snapshot.
func (s Store) ReplaceSocial(each func(put func(key, value []byte) error) error) error {
	b := s.NewBatch()
	for _, span := range snapshotSpan {
		_ = b.DeleteRange(span[0], span[1], nil)
	}
	var applied []byte
	err := each(func(key, value []byte) error {
		if bytes.Equal(key, keyApplied) {
			applied = bytes.Clone(value)
			return nil
		}
		_ = b.Set(key, value, nil)
		if b.Len() < replaceBatchBytes {
			return nil
		}
		err := s.CommitNoSync(b)
		b = s.NewBatch()
		return err
	})
	if err != nil {
		_ = b.Close()
		return err
	}
	if applied != nil {
		_ = b.Set(keyApplied, applied, nil)
	}
	return s.Commit(b)
}
