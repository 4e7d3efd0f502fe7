package measure

import "time"

// Seconds is a duration that reads and writes as a number of seconds.
type Seconds float64

// Duration converts s to a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// ToSeconds converts d to Seconds.
func ToSeconds(d time.Duration) Seconds { return Seconds(d.Seconds()) }

// Quantile is one step of a percentile spectrum.
type Quantile struct {
	Percentile float64 `json:"percentile"`
	Ms         float64 `json:"ms"`
	// Count is the number of samples at or below Ms.
	Count int64 `json:"count"`
}
