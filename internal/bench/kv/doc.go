// Package kv is the key-value load scenario, `surge bench kv`: wrk2's open
// model at a fixed rate, or a search for the highest rate that meets a
// latency bound (FindMax).
package kv
