// Package bench is surge's load lab: it drives a running surge over its
// public API and reports what it saw in the shape of the load-test reports
// surge answers (SPEC §6).
//
// The package is split into pieces that every scenario reuses and the
// scenarios themselves:
//
//   - Recorder and Collector measure. Each worker (VU) owns a Recorder, so
//     the hot path takes no locks: a Recorder keeps an HdrHistogram of the
//     whole run plus one small histogram per wall-clock second, and hands
//     each finished second to the Collector, which builds the per-second
//     time series. Whole-run histograms are merged once, at the end.
//   - Closed is the closed-loop load model (k6's looping VUs, ghz's -c):
//     every VU starts its next iteration as soon as the last one ended.
//   - HTTPClient and Endpoint send requests, reusing request bodies and
//     reply buffers, and count the bytes on the wire. By default they use
//     a lean HTTP/1.1 client (fastclient.go, fastparse.go): one connection
//     per VU, driven by the VU's own goroutine, which costs the shared
//     machine a fraction of the CPU of net/http's Transport, the other
//     choice (StdClient).
//   - Progress prints a line a second while a run goes; Result is the
//     scenario-independent outcome of a run, written as a k6-style summary
//     (WriteSummary), JSON (WriteJSON) or Markdown (WriteMarkdown).
//
// Scenario code (transfer.go and its setup) only builds requests, judges
// replies and fills the scenario-specific parts of a Result.
package bench
