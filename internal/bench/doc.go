// Package bench is surge's load lab: it drives a running surge over its
// public API and reports what it saw in the shape of the load-test reports
// surge answers (docs/BENCHMARKS.md).
//
// The lab is split by what each piece is:
//
//   - httpc: the HTTP client the VUs send with.
//   - measure: Recorder and Collector (histograms, the per-second series),
//     the machine-stall meter and the machine's CPU steal.
//   - load: the closed-loop (Closed) and open (Open) load models.
//   - report: Result and its shapes (summary, JSON, Markdown, HTML,
//     compare), verdicts and the progress line.
//   - one package per scenario (transfer, kv, spike, wallet, ...), which
//     only builds requests, judges replies and fills the scenario's own
//     parts of a Result.
//
// This package holds what the scenarios share: Common, the settings every
// scenario has, setup helpers (ForEach, SendRetrying), and the flags'
// environment variables (BindEnv).
package bench
