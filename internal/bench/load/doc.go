// Package load holds the load lab's two load models. Closed is the
// closed-loop model (k6's looping VUs, ghz's -c): every VU starts its next
// iteration as soon as the last one ended. Open is wrk2's open model:
// requests fall due at a fixed rate whatever the server does, and each
// counts its latency from when it was due.
package load
