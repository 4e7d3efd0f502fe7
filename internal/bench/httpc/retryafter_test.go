package httpc

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

// TestReplyRetryAfter: a reply's Retry-After in seconds is read; a date,
// or a value past an hour, is none.
func TestReplyRetryAfter(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"Retry-After: 1":    time.Second,
		"retry-after:  30 ": 30 * time.Second,
		"Retry-After: Wed, 21 Oct 2015 07:28:00 GMT": 0,
		"Retry-After: 99999":                         0,
		"X-Other: 1":                                 0,
	} {
		reply := "HTTP/1.1 503 Service Unavailable\r\n" + in + "\r\nContent-Length: 0\r\n\r\n"
		r, _, err := readResponse(bufio.NewReader(strings.NewReader(reply)), false, nil)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if r.retryAfter != want {
			t.Errorf("%q: Retry-After %v, want %v", in, r.retryAfter, want)
		}
	}
}
