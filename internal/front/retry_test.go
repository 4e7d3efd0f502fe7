package front

import (
	"slices"
	"testing"
)

// TestRetrySpreadBooksEachSecondUpToItsShare: refusals in one second are
// told to come back in the earliest seconds that have room, perSecond
// each; a later second's refusals book around what earlier ones booked.
func TestRetrySpreadBooksEachSecondUpToItsShare(t *testing.T) {
	r := newRetrySpread(2)
	var got []int
	for range 5 {
		got = append(got, r.nextAt(10))
	}
	if want := []int{1, 1, 2, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("five refusals in one second: Retry-After %v, want %v", got, want)
	}
	// Seconds 11 and 12 hold 2 returns each, 13 holds 1: from second
	// 11, 13 has room for one more, then 14 for two.
	got = got[:0]
	for range 3 {
		got = append(got, r.nextAt(11))
	}
	if want := []int{2, 3, 3}; !slices.Equal(got, want) {
		t.Errorf("three refusals the next second: Retry-After %v, want %v", got, want)
	}
}

// TestRetrySpreadPastItsHorizon: once every second up to maxRetryAfter
// is full, a refusal goes to the least booked one, not always the last.
func TestRetrySpreadPastItsHorizon(t *testing.T) {
	r := newRetrySpread(1)
	for k := 1; k <= maxRetryAfter; k++ {
		if got := r.nextAt(0); got != k {
			t.Fatalf("refusal %d: Retry-After %d, want %d", k, got, k)
		}
	}
	seen := map[int]int{}
	for range 2 * maxRetryAfter {
		seen[r.nextAt(0)]++
	}
	for k := 1; k <= maxRetryAfter; k++ {
		if seen[k] != 2 {
			t.Errorf("past the horizon, Retry-After %d given %d times, want 2 (evenly spread): %v", k, seen[k], seen)
		}
	}
}

// TestRetrySpreadForgetsPastSeconds: a second's slot is reused for a
// later second once it is past, with nothing booked.
func TestRetrySpreadForgetsPastSeconds(t *testing.T) {
	r := newRetrySpread(1)
	if got := r.nextAt(0); got != 1 {
		t.Fatalf("first refusal: Retry-After %d, want 1", got)
	}
	// Second 1's slot is second 1+len(booked)'s too.
	if got := r.nextAt(int64(len(r.booked))); got != 1 {
		t.Errorf("a refusal a lap later: Retry-After %d, want 1", got)
	}
}
