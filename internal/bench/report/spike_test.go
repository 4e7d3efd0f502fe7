package report

import (
	"strings"
	"testing"
)

func TestSpikeReportErr(t *testing.T) {
	tests := []struct {
		name   string
		report SpikeReport
		failed int64
		want   string // "" for nil
	}{
		{"clean", SpikeReport{}, 0, ""},
		{"double booking in the replies", SpikeReport{DoubleBookings: 2}, 0, "2 double bookings"},
		{"double booking on the server", SpikeReport{SeatMaps: SeatMapCheck{DoubleBooked: 1}}, 0, "1 double bookings"},
		{"both add up", SpikeReport{DoubleBookings: 2, SeatMaps: SeatMapCheck{DoubleBooked: 1}}, 5, "3 double bookings"},
		{"a sold seat is free", SpikeReport{SeatMaps: SeatMapCheck{Missing: 4}}, 0, "4 seats of RESERVED replies free on the server"},
		{"unreported seats, no failed request", SpikeReport{SeatMaps: SeatMapCheck{Unreported: 3}}, 0, "3 seats taken on the server without a RESERVED reply"},
		{"unreported seats explained by failed requests", SpikeReport{SeatMaps: SeatMapCheck{Unreported: 3}}, 2, ""},
		{"inconsistent seat maps", SpikeReport{SeatMaps: SeatMapCheck{Inconsistent: 1}}, 0, "1 areas with inconsistent seat maps"},
		{"unreadable seat maps", SpikeReport{SeatMaps: SeatMapCheck{Errors: 7}}, 0, "7 seat maps unreadable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.report.err(tt.failed)
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err() = %v; want %q", err, tt.want)
			}
		})
	}
}
