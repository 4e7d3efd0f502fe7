package spike

import (
	"strings"
	"testing"
	"time"
)

func TestSpikeConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *SpikeConfig)
		want   string // "" for valid
	}{
		{"defaults", func(*SpikeConfig) {}, ""},
		{"one seat", func(c *SpikeConfig) { c.Events, c.Areas, c.Rows, c.Cols, c.MaxSeats = 1, 1, 1, 1, 1 }, ""},
		{"warm-up", func(c *SpikeConfig) { c.Warmup = time.Second }, "no warm-up"},
		{"no events", func(c *SpikeConfig) { c.Events = 0 }, "--events and --areas"},
		{"too many areas", func(c *SpikeConfig) { c.Areas = 1001 }, "--events and --areas"},
		{"no rows", func(c *SpikeConfig) { c.Rows = 0 }, "--rows and --cols"},
		{"too many columns", func(c *SpikeConfig) { c.Cols = 1001 }, "--rows and --cols"},
		{"too many seats", func(c *SpikeConfig) { c.Events, c.Areas, c.Rows, c.Cols = 5, 1000, 1000, 1 }, "at most 4,000,000 seats"},
		{"more seats than a row", func(c *SpikeConfig) { c.Cols, c.MaxSeats = 3, 4 }, "--max-seats"},
		{"no seats", func(c *SpikeConfig) { c.MaxSeats = 0 }, "--max-seats"},
		{"negative wait", func(c *SpikeConfig) { c.Wait = -time.Second }, "--wait"},
		{"long wait", func(c *SpikeConfig) { c.Wait = 2 * time.Minute }, "--wait"},
		{"short hold", func(c *SpikeConfig) { c.Hold = time.Millisecond }, "--hold"},
		{"negative retries", func(c *SpikeConfig) { c.Retries = -1 }, "--retries"},
		{"no requests", func(c *SpikeConfig) { c.Iterations = 0 }, "--duration or --iterations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultSpikeConfig()
			tt.change(&c)
			err := c.validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("validate() = %v; want %q", err, tt.want)
			}
		})
	}
}

func TestSpikePlan(t *testing.T) {
	c := DefaultSpikeConfig()
	c.Events, c.Areas, c.Wait = 2, 3, 5*time.Second
	p := newSpikePlan(c, "fest")
	if len(p.events) != 2 || p.events[1] != "fest-1" || len(p.areas) != 6 {
		t.Fatalf("plan %+v", p)
	}
	a := p.areas[4]
	if a.event != "fest-1" || a.id != "1" || string(a.post) != "/v1/event/fest-1/reservation?wait=5s" {
		t.Fatalf("area 4 = %+v", a)
	}
	if want := `{"eventId":"fest-1","areaId":"1","type":"RANDOM","seats":[],"userId":"`; a.bodyHead != want {
		t.Fatalf("body head %s; want %s", a.bodyHead, want)
	}
}
