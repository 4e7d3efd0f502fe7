// Package units formats the load lab's numbers as the tools its reports
// imitate do: k6's durations and byte counts, thousands separators,
// percentages.
package units

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// K6Duration formats d the way k6 does: two decimals in the largest
// fitting unit, trailing zeros dropped ("69.03ms", "1.04s", "970ns").
func K6Duration(d time.Duration) string {
	switch {
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		d = d.Round(10 * time.Nanosecond)
	}
	return d.String()
}

// MsDuration converts milliseconds to a Duration.
func MsDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// SIBytes formats a byte count with SI prefixes as k6 does: "105 MB",
// "1.7 MB", "964 kB".
func SIBytes(n float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	i := 0
	for n >= 1000 && i < len(units)-1 {
		n /= 1000
		i++
	}
	if n < 10 && i > 0 {
		return fmt.Sprintf("%.1f %s", n, units[i])
	}
	return fmt.Sprintf("%.0f %s", n, units[i])
}

// Thousands formats n with comma separators: 1234567 → "1,234,567".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// Rate formats a rate as a rounded integer with separators.
func Rate(r float64) string { return Thousands(int64(math.Round(r))) }

// Percent formats a share (0..1) as a percentage with two decimals.
func Percent(share float64) string { return strconv.FormatFloat(share*100, 'f', 2, 64) + "%" }

// Percent0 formats a share (0..1) as a whole percentage.
func Percent0(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" }
