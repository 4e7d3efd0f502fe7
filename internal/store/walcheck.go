package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Pebble replays the newest WAL up to its first invalid chunk and drops
// the rest as the torn tail of a crash, silently. That is right for a
// crash mid-write, but a flipped byte in the middle of the log drops every
// acknowledged record after it just as silently; Pebble's own read-ahead
// only looks for proof in the blocks after the damaged one, so damage
// with valid records after it in the same 32 KiB block goes unnoticed.
// checkWAL tells the two apart before Pebble opens: damage followed by a
// valid chunk of the same log that says the damaged offset had been
// fsynced (its sync offset is past it; for logs without sync offsets, any
// valid chunk after it) is corruption, and Open refuses unless told to
// accept the loss (Options.AcceptWALLoss).
//
// The log's last record has nothing after it to prove it was fsynced, so
// a flipped byte in it looks like a torn write. A crash tears a write at
// a sector boundary at worst, never inside a 512-byte sector; so a last
// chunk whose header names this log and a length the file holds, lying
// within one sector, that fails its checksum is damage too, and Open
// refuses. One that spans sectors may be torn or damaged: it is dropped,
// as Pebble would, and said on stderr.

// The WAL's chunk layout (github.com/cockroachdb/pebble/v2/record): a
// checksum (4 bytes), a payload length (2), an encoding (1), the log's
// number (4) and, in the format with sync offsets, the offset the log had
// been fsynced to when the chunk was written (8); then the payload. The
// checksum is a masked CRC-32C of everything after the length. Chunks
// never cross a 32 KiB block.
const (
	walBlock          = 32 << 10
	walLogNumHeader   = 11
	walSyncHeader     = 19
	walFirstLogNumEnc = 5  // recyclable encodings: 5-8
	walFirstSyncEnc   = 9  // with sync offsets: 9-12
	walLastEnc        = 12 // last known encoding
	walSector         = 512
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WALDamage is corruption found in a WAL: valid, fsynced records follow
// damaged bytes, or the last record is damaged although written whole, so
// replaying up to the damage would silently drop them.
type WALDamage struct {
	File string
	// Offset is where the damage starts: the end of the last record
	// replayed.
	Offset int64
	// Valid is the offset of a valid chunk after the damage; 0 when the
	// damage is the last record, which ends at End.
	Valid, End int64
}

func (d *WALDamage) Error() string {
	if d.Valid == 0 {
		return fmt.Sprintf("WAL %s: its last record (offset %d to %d) fails its checksum although it was written whole "+
			"(within one 512-byte sector, which a crash does not tear): starting would silently drop an acknowledged write. "+
			"Restore the data directory from a copy, or accept its loss with --accept-wal-loss", d.File, d.Offset, d.End)
	}
	return fmt.Sprintf("WAL %s is damaged at offset %d, and valid fsynced records follow (from offset %d): "+
		"starting would silently drop acknowledged writes. Restore the data directory from a copy, or accept the loss of "+
		"everything in this WAL from offset %d with --accept-wal-loss", d.File, d.Offset, d.Valid, d.Offset)
}

// checkNewestWAL checks the newest WAL in dir (see above). Older WALs
// need no check: Pebble expects them to end cleanly and fails to open on
// any damage in them.
func checkNewestWAL(dir string) (*WALDamage, error) {
	path, num, ok, err := newestWAL(dir)
	if err != nil || !ok {
		return nil, err
	}
	return checkWAL(path, num)
}

func newestWAL(dir string) (path string, num uint32, ok bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", 0, false, nil
		}
		return "", 0, false, err
	}
	var nums []uint64
	for _, e := range entries {
		name, found := strings.CutSuffix(e.Name(), ".log")
		if !found {
			continue
		}
		if n, err := strconv.ParseUint(name, 10, 32); err == nil {
			nums = append(nums, n)
		}
	}
	if len(nums) == 0 {
		return "", 0, false, nil
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	n := nums[len(nums)-1]
	return filepath.Join(dir, fmt.Sprintf("%06d.log", n)), uint32(n), true, nil
}

// checkWAL reads the log at path to its end, as Pebble's replay would, and
// scans what follows the last record it read for proof of damage.
func checkWAL(path string, num uint32) (*WALDamage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	end, invalid := replayable(data, num)
	if valid, ok := validChunkAfter(data, num, end); ok {
		return &WALDamage{File: path, Offset: end, Valid: valid}, nil
	}
	// The chunk replay stops at has a whole header: it was written, and
	// its checksum fails.
	if last, ok := chunkHeader(data, invalid, num); ok {
		if invalid/walSector == (last-1)/walSector {
			return &WALDamage{File: path, Offset: end, End: last}, nil
		}
		fmt.Fprintf(os.Stderr, "surge: WAL %s: dropping its last record (offset %d to %d), which fails its checksum as a write "+
			"torn by a crash does; if the process did not crash while writing it, it is damage and an acknowledged write is lost\n",
			path, end, last)
	}
	return nil, nil
}

// replayable returns the offset up to which the log's records read back
// whole, the end of the last record before the first invalid chunk, and
// where that chunk starts.
func replayable(data []byte, num uint32) (end, invalid int64) {
	size := int64(len(data))
	p := int64(0)
	for p < size {
		// The writer pads a block's tail too short for a header with zeros.
		if rest := walBlock - p%walBlock; rest < walSyncHeader && allZero(data[p:min(p+rest, size)]) {
			p += rest
			continue
		}
		next, enc, ok := chunkAt(data, p, num)
		if !ok {
			break
		}
		if pos := (enc - 1) % 4; pos == 0 || pos == 3 { // a whole record, or its last chunk
			end = next
		}
		p = next
	}
	return end, p
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// validChunkAfter looks for a chunk of log num past from that checks out
// and proves that from had been fsynced, returning its offset.
func validChunkAfter(data []byte, num uint32, from int64) (int64, bool) {
	for p := from + 1; p+walLogNumHeader <= int64(len(data)); p++ {
		if _, enc, ok := chunkAt(data, p, num); ok && provesSynced(data, p, enc, from) {
			return p, true
		}
	}
	return 0, false
}

// chunkAt checks the chunk at p: its header whole (chunkHeader) and its
// checksum right. It returns where the chunk ends and its encoding.
func chunkAt(data []byte, p int64, num uint32) (end int64, enc byte, ok bool) {
	end, ok = chunkHeader(data, p, num)
	if !ok {
		return 0, 0, false
	}
	sum := crc32.Checksum(data[p+6:end], castagnoli)
	if binary.LittleEndian.Uint32(data[p:p+4]) != (sum>>15|sum<<17)+0xa282ead8 {
		return 0, 0, false
	}
	return end, data[p+6], true
}

// chunkHeader checks the header of the chunk at p: an encoding that names
// its log, log num, and a length within its block and the file. It
// returns where the chunk ends.
func chunkHeader(data []byte, p int64, num uint32) (end int64, ok bool) {
	if p+walLogNumHeader > int64(len(data)) {
		return 0, false
	}
	enc := data[p+6]
	if enc < walFirstLogNumEnc || enc > walLastEnc || binary.LittleEndian.Uint32(data[p+7:p+11]) != num {
		return 0, false
	}
	header := int64(walLogNumHeader)
	if enc >= walFirstSyncEnc {
		header = walSyncHeader
	}
	end = p + header + int64(binary.LittleEndian.Uint16(data[p+4:p+6]))
	if end > int64(len(data)) || p/walBlock != (end-1)/walBlock {
		return 0, false
	}
	return end, true
}

// provesSynced reports whether the valid chunk at p shows that offset
// damage had been fsynced before it was written: its sync offset is past
// damage. A log without sync offsets cannot say, and any valid chunk after
// damage counts.
func provesSynced(data []byte, p int64, enc byte, damage int64) bool {
	if enc < walFirstSyncEnc {
		return true
	}
	return int64(binary.LittleEndian.Uint64(data[p+11:p+19])) > damage
}

// checkWAL refuses to open over a damaged WAL (see above), unless the
// store accepts the loss: then the WAL is cut at the damage, which is what
// replaying it would keep, and the loss is said on stderr.
func (s *Store) checkWAL() error {
	d, err := checkNewestWAL(s.dir)
	if err != nil || d == nil {
		return err
	}
	if !s.acceptWALLoss {
		return d
	}
	if d.Valid == 0 {
		fmt.Fprintf(os.Stderr, "surge: accepting the loss of WAL %s from offset %d (its last record, damaged)\n", d.File, d.Offset)
	} else {
		fmt.Fprintf(os.Stderr, "surge: accepting the loss of WAL %s from offset %d (damaged; valid records followed from offset %d)\n", d.File, d.Offset, d.Valid)
	}
	return os.Truncate(d.File, d.Offset)
}

// corrupt says, once per file, that a read met a corrupt block (a
// checksum mismatch). Pebble's default listener gives up (Fatalf), which
// would end the process from whichever goroutine read the block; with
// this one the read's error is returned, so the request fails (a range
// breaks off) and the rest of the data is served.
func (s *Store) corrupt(info pebble.DataCorruptionInfo) {
	if _, seen := s.corruptFiles.LoadOrStore(info.Path, true); seen {
		return
	}
	fmt.Fprintf(os.Stderr, "surge: storage corruption in %s (keys %s): %v; reads of it fail, restore the data directory from a copy\n",
		info.Path, info.Bounds.String(), info.Details)
}
