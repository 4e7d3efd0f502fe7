package chaos

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Report is a run's outcome: per kind of operation, how many were
// acknowledged, refused and left without a reply, and the losses and
// anomalies the audits found.
type Report struct {
	counts        [numOps][3]int
	lost          [numOps]int
	anomalies     [numOps]int
	examples      []string
	audits        int
	restarts      []time.Duration
	flips         int
	flipsDetected int
	// tableFlips and tableFlipsReported count the table bytes flipped
	// and those surge named as damaged.
	tableFlips         int
	tableFlipsReported int
	fills              int
	fillsResumed       int
}

func newReport() *Report { return &Report{} }

const maxExamples = 10

// lose records an acknowledged write the audit did not find.
func (r *Report) lose(o op, format string, args ...any) {
	r.lost[o]++
	r.example("lost: "+format, args...)
}

// anomaly records something the server shows that it must not.
func (r *Report) anomaly(o op, format string, args ...any) {
	r.anomalies[o]++
	r.example("anomaly: "+format, args...)
}

func (r *Report) example(format string, args ...any) {
	if len(r.examples) < maxExamples {
		r.examples = append(r.examples, fmt.Sprintf(format, args...))
	}
}

// Lost is the number of acknowledged writes not found, and Anomalies the
// things shown that must not be.
func (r *Report) Lost() int      { return sum(r.lost[:]) }
func (r *Report) Anomalies() int { return sum(r.anomalies[:]) }

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// write prints the table.
func (r *Report) write(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\toperations\tacknowledged\trefused\tunknown\tlost\tanomalies\t")
	var tot [5]int
	for o := range numOps {
		c := r.counts[o]
		row := [5]int{c[acked] + c[refused] + c[unknown], c[acked], c[refused], c[unknown], r.lost[o]}
		for i := range row {
			tot[i] += row[i]
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", opNames[o], row[0], row[1], row[2], row[3], row[4], r.anomalies[o])
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\t\n", tot[0], tot[1], tot[2], tot[3], tot[4], r.Anomalies())
	_ = tw.Flush()
	fmt.Fprintf(out, "kill -9: %d, audits: %d", len(r.restarts), r.audits)
	if len(r.restarts) > 0 {
		s := slices.Clone(r.restarts)
		slices.Sort(s)
		fmt.Fprintf(out, ", restart to ready: median %v, max %v", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	}
	fmt.Fprintln(out)
	if r.flips > 0 {
		fmt.Fprintf(out, "flipped WAL bytes: %d, refused to start naming the damage: %d\n", r.flips, r.flipsDetected)
	}
	if r.tableFlips > 0 {
		fmt.Fprintf(out, "flipped table bytes: %d, reported naming the file: %d\n", r.tableFlips, r.tableFlipsReported)
	}
	if r.fills > 0 {
		fmt.Fprintf(out, "disk filled: %d, writes refused and then resumed once freed: %d\n", r.fills, r.fillsResumed)
	}
	for _, e := range r.examples {
		fmt.Fprintln(out, "  "+e)
	}
}

// verdict is the run's error: any loss, anomaly or undetected damage.
func (r *Report) verdict() error {
	var errs []error
	if n := r.Lost(); n > 0 {
		errs = append(errs, fmt.Errorf("%d acknowledged writes lost", n))
	}
	if n := r.Anomalies(); n > 0 {
		errs = append(errs, fmt.Errorf("%d anomalies", n))
	}
	if r.fills != r.fillsResumed {
		errs = append(errs, fmt.Errorf("%d of %d full disks not reported or not resumed from", r.fills-r.fillsResumed, r.fills))
	}
	if r.flips != r.flipsDetected {
		errs = append(errs, fmt.Errorf("%d of %d flipped bytes not detected", r.flips-r.flipsDetected, r.flips))
	}
	if r.tableFlips != r.tableFlipsReported {
		errs = append(errs, fmt.Errorf("%d of %d flipped table bytes not reported", r.tableFlips-r.tableFlipsReported, r.tableFlips))
	}
	return errors.Join(errs...)
}
