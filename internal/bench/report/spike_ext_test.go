package report_test

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/report/reporttest"
)

func TestCompareSpikes(t *testing.T) {
	a, b := reporttest.SpikeResult(), reporttest.SpikeResult()
	faster := measure.Seconds(5.1)
	b.Spike.LastSale = &faster
	b.Spike.ServerPeakRSS = 900 << 20
	var out bytes.Buffer
	if err := report.Compare(&out, "a", a, "b", b); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^spike: seats sold +160,000 +160,000 +0%$`,
		`(?m)^spike: sold out after s +6\.80 +5\.10 +-25\.0% +better$`,
		`(?m)^spike: double bookings +0 +0 +0%$`,
		`(?m)^spike: server peak RSS MiB +600 +900 +\+50\.0% +worse$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("output does not match %s:\n%s", re, out.String())
		}
	}
}

func TestSpikeSummaryAndFiles(t *testing.T) {
	r := reporttest.SpikeResult()
	r.Verdict = &report.Verdict{Target: "the target", Pass: true}
	var sum bytes.Buffer
	if err := report.WriteSummary(&sum, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"stock..........................: 4 events × 100 areas × 20×20 seats = 160,000 seats",
		"reservation_latency............: p(50)=900ms p(95)=2.1s p(99)=2.8s max=4s",
		"server_processing..............: p(50)=850ms p(95)=2s p(99)=2.7s max=3.9s",
		"completion_time................: 14.2s",
		"sold_out.......................: at 6.8s (last RESERVED reply); server's soldOutAt at 6.75s",
		"seats_sold.....................: 160,000 of 160,000 (server 160,000); per area min=400 max=400\n",
		"reservations...................: RESERVED 64,012  FAILED NOT_AVAILABLE 935,988",
		"double_bookings................: 0 in the replies; seat maps of 400 areas: 160,000 seats taken, 0 double booked, 0 missing, 0 unreported, 0 inconsistent, 0 unreadable",
		"server_peak_rss................: 629 MB",
		"verdict: PASS",
	} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	var md bytes.Buffer
	if err := report.WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Spike\n\n| metric | value |\n|---|---|\n| stock | 4 events × 100 areas × 20×20 seats = 160,000 seats |") {
		t.Errorf("Markdown lacks the spike table:\n%s", md.String())
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Spike, r.Spike) {
		t.Fatalf("spike report after a JSON round trip:\n%+v\nwant\n%+v", back.Spike, r.Spike)
	}
}

func TestWriteHTMLOfASpike(t *testing.T) {
	r := reporttest.SpikeResult()
	r.Sales = []measure.SalePoint{{Second: 0, Sold: 0}, {Second: 1, Sold: 90_000}, {Second: 7, Sold: 160_000}}
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Spike</h2>", "<th>sold_out</th><td>at 6.8s (last RESERVED reply); server&#39;s soldOutAt at 6.75s</td>",
		"4 events × 100 areas × 20×20 seats = 160,000 seats", "Sales curve", "<title>seats sold</title>"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("spike report lacks %q", want)
		}
	}
}
