package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/surge-dev/surge/internal/bench/units"
)

// better says which way a figure improves.
type better int

const (
	neutral better = iota // a count or setting: neither way is better
	higher
	lower
)

// figure is one line of a comparison: how to read it from a Result, and
// whether it is present there.
type figure struct {
	name   string
	better better
	value  func(*Result) (float64, bool)
}

func always(f func(*Result) float64) func(*Result) (float64, bool) {
	return func(r *Result) (float64, bool) { return f(r), true }
}

// withOps is present only for runs that count ops apart from requests.
func withOps(f func(*Result) float64) func(*Result) (float64, bool) {
	return func(r *Result) (float64, bool) { return f(r), r.Totals.OpsName != "" }
}

// figures are the lines of a comparison, in order. A scenario with figures
// of its own (a spike's sold-out time, say) adds them here.
var figures = []figure{
	{"requests/s", higher, always(func(r *Result) float64 { return r.Totals.RequestsPerS })},
	{"ops/s", higher, withOps(func(r *Result) float64 { return r.Totals.OpsPerS })},
	{"requests", neutral, always(func(r *Result) float64 { return float64(r.Totals.Requests) })},
	{"failed %", lower, always(func(r *Result) float64 { return 100 * r.FailureRate() })},
	{"latency avg ms", lower, always(func(r *Result) float64 { return r.Latency.Avg })},
	{"latency min ms", lower, always(func(r *Result) float64 { return r.Latency.Min })},
	{"latency med ms", lower, always(func(r *Result) float64 { return r.Latency.Med })},
	{"latency p90 ms", lower, always(func(r *Result) float64 { return r.Latency.P90 })},
	{"latency p95 ms", lower, always(func(r *Result) float64 { return r.Latency.P95 })},
	{"latency p99 ms", lower, always(func(r *Result) float64 { return r.Latency.P99 })},
	{"latency p99.9 ms", lower, always(func(r *Result) float64 { return r.Latency.P999 })},
	{"latency max ms", lower, always(func(r *Result) float64 { return r.Latency.Max })},
	{"elapsed s", neutral, always(func(r *Result) float64 { return float64(r.Totals.Elapsed) })},
	{"load generator µs/request", lower, func(r *Result) (float64, bool) { return r.Client.MicrosPerRequest, r.Client.CPU >= 0 }},
	// The machine's stalls are context, not surge's doing: neither better
	// nor worse.
	{"machine stalled %", neutral, func(r *Result) (float64, bool) {
		if r.MachineStalls == nil {
			return 0, false
		}
		return 100 * r.MachineStalls.StalledShare, true
	}},
	{"spike: seats sold", higher, spike(func(s *SpikeReport) (float64, bool) { return float64(s.SeatsSold), true })},
	{"spike: sold out after s", lower, spike(func(s *SpikeReport) (float64, bool) {
		if s.LastSale == nil || !s.SoldOut() {
			return 0, false
		}
		return float64(*s.LastSale), true
	})},
	{"spike: double bookings", lower, spike(func(s *SpikeReport) (float64, bool) { return float64(s.DoubleBookings), true })},
	{"spike: server peak RSS MiB", lower, spike(func(s *SpikeReport) (float64, bool) {
		return float64(s.ServerPeakRSS) / (1 << 20), s.ServerPeakRSS >= 0
	})},
}

// spike reads a figure of a spike's own report, present only in spikes.
func spike(f func(*SpikeReport) (float64, bool)) func(*Result) (float64, bool) {
	return func(r *Result) (float64, bool) {
		if r.Spike == nil {
			return 0, false
		}
		return f(r.Spike)
	}
}

// ReadResultFile reads a Result written with --out FILE.json.
func ReadResultFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".md" || ext == ".html" || ext == ".htm" {
		return nil, fmt.Errorf("%s: a %s report is for reading; surge bench compare reads the .json result of a run "+
			"(write one with --out run.json, beside the %s one if you like: --out takes one file a run)", path, ext, ext)
	}
	r, err := ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (surge bench compare reads the .json files --out writes)", path, err)
	}
	return r, nil
}

// Compare writes the change from run a to run b (named nameA and nameB),
// figure by figure: both values, the relative change, and whether it is
// better or worse. It first says where the runs' scenario, parameters or
// machine differ, since a change then need not be surge's doing.
func Compare(w io.Writer, nameA string, a *Result, nameB string, b *Result) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "a: %s — %s, %s\nb: %s — %s, %s\n", nameA, a.Scenario, a.Start.UTC().Format("2006-01-02 15:04:05Z"),
		nameB, b.Scenario, b.Start.UTC().Format("2006-01-02 15:04:05Z"))
	if a.Scenario != b.Scenario {
		fmt.Fprintf(&sb, "warning: different scenarios (%s, %s): the figures do not measure the same thing\n", a.Scenario, b.Scenario)
	}
	for _, d := range differences(paramRows(a.Params), paramRows(b.Params)) {
		fmt.Fprintf(&sb, "parameter %s\n", d)
	}
	if ma, mb := machineLine(a.Machine), machineLine(b.Machine); ma != mb {
		fmt.Fprintf(&sb, "machine: %s → %s\n", ma, mb)
	}
	sb.WriteString("\n")
	rows := [][]string{{"figure", "a", "b", "change", ""}}
	for _, f := range figures {
		va, okA := f.value(a)
		vb, okB := f.value(b)
		if !okA && !okB {
			continue
		}
		rows = append(rows, []string{f.name, present(va, okA), present(vb, okB), change(va, vb, okA && okB), judge(f.better, va, vb, okA && okB)})
	}
	writeTable(&sb, rows)
	if a.Verdict != nil || b.Verdict != nil {
		fmt.Fprintf(&sb, "\nverdict: %s → %s\n", verdictWord(a.Verdict), verdictWord(b.Verdict))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeTable writes rows as columns two spaces apart: the first and last
// aligned left (names, judgements), the figures between right.
func writeTable(sb *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			gap := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			switch {
			case i == 0:
				line.WriteString(cell + gap)
			case i == len(row)-1:
				line.WriteString("  " + cell)
			default:
				line.WriteString("  " + gap + cell)
			}
		}
		sb.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// differences lists the rows whose value differs, or that only one side
// has, as "key: a → b".
func differences(a, b [][]string) []string {
	bv := map[string]string{}
	for _, row := range b {
		bv[row[0]] = row[1]
	}
	var out []string
	seen := map[string]bool{}
	for _, row := range a {
		seen[row[0]] = true
		if other, ok := bv[row[0]]; !ok || other != row[1] {
			out = append(out, fmt.Sprintf("%s: %s → %s", row[0], row[1], orNone(other, ok)))
		}
	}
	for _, row := range b {
		if !seen[row[0]] {
			out = append(out, fmt.Sprintf("%s: (none) → %s", row[0], row[1]))
		}
	}
	return out
}

func orNone(v string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return v
}

func present(v float64, ok bool) string {
	switch {
	case !ok:
		return "—"
	case v == math.Trunc(v):
		return units.Thousands(int64(v))
	case math.Abs(v) >= 100:
		return units.Rate(v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// change is b relative to a, in percent.
func change(a, b float64, ok bool) string {
	switch {
	case !ok:
		return ""
	case a == b:
		return "0%"
	case a == 0:
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", 100*(b-a)/math.Abs(a))
}

func judge(dir better, a, b float64, ok bool) string {
	if !ok || dir == neutral || a == b {
		return ""
	}
	if (b > a) == (dir == higher) {
		return "better"
	}
	return "worse"
}

func verdictWord(v *Verdict) string {
	if v == nil {
		return "none"
	}
	return passWord(v.Pass)
}
