package report

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/units"
)

// Progress prints one status line per second while a run goes. On a
// terminal the line is rewritten in place; elsewhere (a log file, CI) each
// second gets its own line.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	opsName string
	pending bool // a rewritable line is on screen
}

// NewProgress returns a Progress writing to w. opsName, if not empty,
// names the ops counted besides requests (e.g. "transfers" for batches).
func NewProgress(w io.Writer, opsName string) *Progress {
	return &Progress{w: w, tty: isTerminal(w), opsName: opsName}
}

// isTerminal reports whether w is a character device, which is all a
// progress line needs to know and needs no terminal library.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// minRateSpan is the shortest second whose rate a progress line shows.
const minRateSpan = 0.5

// Tick prints the line for one closed second; it fits Closed.OnTick.
//
// The last second of a run is usually a fraction of one: a rate made from
// its few requests would read as a collapse or a burst, so its line shows
// the fraction instead.
func (p *Progress) Tick(t measure.Tick) {
	line := fmt.Sprintf("%6.1fs  %s requests", t.Elapsed.Seconds(), units.Thousands(t.TotalRequests))
	switch {
	case t.Span < minRateSpan:
		line += fmt.Sprintf("  (last %s: no rate)", units.K6Duration(time.Duration(t.Span*float64(time.Second))))
	case p.opsName != "":
		line += fmt.Sprintf("  %s/s  %s %s/s", units.Rate(t.Rate()), units.Rate(t.OpsRate()), p.opsName)
	default:
		line += fmt.Sprintf("  %s/s", units.Rate(t.Rate()))
	}
	line += fmt.Sprintf("  p50 %s  p99 %s  failures %s",
		units.K6Duration(units.MsDuration(t.P50Ms)), units.K6Duration(units.MsDuration(t.P99Ms)), units.Thousands(t.TotalFailed))
	p.Line(line)
}

// Printf prints a message of its own (setup steps, warnings), on a fresh
// line if a progress line is showing.
func (p *Progress) Printf(format string, args ...any) {
	p.Line(fmt.Sprintf(format, args...))
	p.Done()
}

// Line shows line as the current progress line: in place on a terminal,
// as a line of its own elsewhere.
func (p *Progress) Line(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		// \r returns to the line start, ESC[K erases what a longer line left.
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		p.pending = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// Done ends a rewritten line, so that what follows starts on its own line.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending {
		fmt.Fprintln(p.w)
		p.pending = false
	}
}
