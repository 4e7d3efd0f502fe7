package ledgerengine

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
)

// The transfer-id filter is checkpointed, so that a restart loads it
// instead of reading every transfer id ever written (at 10 M transfers,
// that pass was most of the time to ready).
//
// A checkpoint is a file beside the store holding the filter and, for
// each shard, the journal record number below which every transfer the
// shard created is in it (its position). Every batch that creates
// transfers writes a journal record naming them (its entries' transfer
// ids and the holds it opened: ledgerstore.JournalRecord), and a shard
// trims its journal no further than the position of the newest durable
// checkpoint. So a recovery loads the checkpoint, adds the ids of the
// journal records from the positions on, and holds every transfer id the
// store holds: the filter answers "no" only for ids never written, and
// an idempotency key can never be taken for new across a restart.
//
// A checkpoint is used only with the store it was written for: the same
// journal epoch (a recovery that clears the journal starts a new one), the
// same number of shards, and no shard's journal trimmed past its position.
// Otherwise recovery reads every transfer id, as it does without a
// checkpoint, and the server writes a new one at once.
//
// Shards ask for a checkpoint when a sweep ends (journal.go) and trim
// their journals once it is written, so the journal keeps about two
// sweeps of records. Writing it copies the newest
// generation of the filter (the others no longer change) and writes the
// file aside, off the shards' path.

// checkpointFile is the checkpoint's name in the store's directory.
const checkpointFile = "ledger-ids.checkpoint"

// checkpointMagic starts a checkpoint file; the version follows it.
const (
	checkpointMagic   = "surge-ledger-ids"
	checkpointVersion = 1
)

// checkpointer writes checkpoints of the ledger's transfer-id filter.
type checkpointer struct {
	path  string
	epoch uint64
	ids   *idFilter
	log   *slog.Logger
	// announced, by shard: the journal records below it have their ids
	// in the filter. covered: those below it are in the newest durable
	// checkpoint, which bounds the shard's journal trims.
	announced []atomic.Uint64
	covered   []atomic.Uint64

	mu      sync.Mutex
	closed  bool
	running bool
	wg      sync.WaitGroup
}

func newCheckpointer(dir string, shards int, log *slog.Logger) *checkpointer {
	return &checkpointer{
		path: filepath.Join(dir, checkpointFile), log: log,
		announced: make([]atomic.Uint64, shards), covered: make([]atomic.Uint64, shards),
	}
}

// request writes a checkpoint in the background, unless one is being
// written or the checkpointer is closed.
func (c *checkpointer) request() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.running || c.epoch == 0 {
		return
	}
	c.running = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.write()
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}()
}

// close waits for a checkpoint being written; no other starts.
func (c *checkpointer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
}

// write writes a checkpoint of the filter as it is now. A failure (a full
// disk) is logged and leaves the last checkpoint in force: the journal
// then keeps its records until a later one succeeds.
func (c *checkpointer) write() {
	began := time.Now()
	pos := make([]uint64, len(c.announced))
	for i := range pos {
		pos[i] = c.announced[i].Load()
	}
	// Read after the positions: every id of the records below them is in.
	st := c.ids.snapshot()
	if err := writeCheckpoint(c.path, c.epoch, pos, st); err != nil {
		c.log.Warn("ledger checkpoint not written; the history journal is kept until one is", "err", err)
		return
	}
	for i, p := range pos {
		c.covered[i].Store(p)
	}
	c.log.Debug("ledger checkpoint written", "elapsed", time.Since(began).Round(time.Millisecond))
}

// checkpoint is a checkpoint read back.
type checkpoint struct {
	epoch     uint64
	positions []uint64
	filter    idFilterState
}

// usable says why cp cannot serve a store whose journal is in state js
// and that runs shards shards, or nil if it can.
func (cp *checkpoint) usable(js ledgerstore.JournalState, shards int) error {
	switch {
	case js.Epoch == 0 || cp.epoch != js.Epoch:
		return errors.New("written for another journal epoch")
	case len(cp.positions) != shards:
		return fmt.Errorf("written for %d shards, not %d", len(cp.positions), shards)
	}
	for s, n := range js.Trimmed {
		if s >= shards || n > cp.positions[s] {
			return fmt.Errorf("shard %d's journal is trimmed past it", s)
		}
	}
	return nil
}

// writeCheckpoint writes the checkpoint durably: to a temporary file,
// synced, renamed over the last one, and the directory synced.
func writeCheckpoint(path string, epoch uint64, positions []uint64, st idFilterState) (err error) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = encodeCheckpoint(f, epoch, positions, st); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// encodeCheckpoint writes the magic and version, the epoch, the positions,
// the filter's generations and an xxhash64 of all that, little-endian.
func encodeCheckpoint(w io.Writer, epoch uint64, positions []uint64, st idFilterState) error {
	sum := xxhash.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<16)
	b := append([]byte(checkpointMagic), checkpointVersion)
	b = binary.LittleEndian.AppendUint64(b, epoch)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(positions)))
	for _, p := range positions {
		b = binary.LittleEndian.AppendUint64(b, p)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(st.size))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.room))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(st.filters)))
	for _, g := range st.filters {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(g)))
		for i := range g {
			for _, word := range g[i] {
				b = binary.LittleEndian.AppendUint32(b, word)
			}
			if len(b) >= 1<<15 {
				_, _ = bw.Write(b)
				b = b[:0]
			}
		}
	}
	_, _ = bw.Write(b)
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint64(nil, sum.Sum64()))
	return err
}

// errBadCheckpoint is a checkpoint file that is not one, or is damaged.
var errBadCheckpoint = errors.New("not a valid ledger checkpoint")

// readCheckpoint reads and checks the checkpoint at path.
func readCheckpoint(path string) (*checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 8 || xxhash.Sum64(b[:len(b)-8]) != binary.LittleEndian.Uint64(b[len(b)-8:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadCheckpoint)
	}
	d := checkpointDecoder{b: b[:len(b)-8]}
	if string(d.take(len(checkpointMagic))) != checkpointMagic || d.byte() != checkpointVersion {
		return nil, fmt.Errorf("%w: unknown format", errBadCheckpoint)
	}
	cp := &checkpoint{epoch: d.u64()}
	n := d.u32()
	for i := uint32(0); i < n && d.ok(); i++ {
		cp.positions = append(cp.positions, d.u64())
	}
	cp.filter.size, cp.filter.room = uint(d.u64()), uint(d.u64())
	gens := d.u32()
	for i := uint32(0); i < gens && d.ok(); i++ {
		cp.filter.filters = append(cp.filter.filters, d.blocks())
	}
	if !d.ok() || len(d.b) != 0 || gens == 0 || cp.filter.room > cp.filter.size {
		return nil, fmt.Errorf("%w: malformed", errBadCheckpoint)
	}
	return cp, nil
}

// checkpointDecoder reads a checkpoint's fields; a short read empties it
// and marks it failed.
type checkpointDecoder struct {
	b      []byte
	failed bool
}

func (d *checkpointDecoder) ok() bool { return !d.failed }

func (d *checkpointDecoder) take(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.b, d.failed = nil, true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *checkpointDecoder) byte() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *checkpointDecoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (d *checkpointDecoder) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// blocks reads a generation: its block count, then its blocks.
func (d *checkpointDecoder) blocks() blockFilter {
	n := d.u64()
	if n == 0 || n > uint64(len(d.b))/32 {
		d.b, d.failed = nil, true
		return nil
	}
	raw := d.take(int(n) * 32)
	g := make(blockFilter, n)
	for i := range g {
		for w := range g[i] {
			g[i][w] = binary.LittleEndian.Uint32(raw[(i*8+w)*4:])
		}
	}
	return g
}

// loadIDs sets up the transfer-id filter: from the checkpoint if it serves
// this store (then recovery adds the journal's ids after it, and cp is
// returned), else by reading every transfer id.
func (l *Ledger) loadIDs(js ledgerstore.JournalState) (*checkpoint, error) {
	l.ckpt = newCheckpointer(l.db.Dir(), len(l.shards), l.cfg.Logger)
	cp, err := readCheckpoint(l.ckpt.path)
	if err == nil {
		err = cp.usable(js, len(l.shards))
	}
	if err == nil {
		l.ids = restoreIDFilter(cp.filter)
		l.ckpt.ids = l.ids
		return cp, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		l.cfg.Logger.Warn("recovery: transfer-id checkpoint not used; reading every transfer id", "file", l.ckpt.path, "reason", err)
	}
	// The filter grows as it fills, so one pass over the ids sizes it.
	l.ids = newIDFilter(0)
	l.ckpt.ids = l.ids
	l.ids.add(l.db.TransferIDs(&err))
	if err != nil {
		return nil, fmt.Errorf("load transfer ids: %w", err)
	}
	return nil, nil
}
