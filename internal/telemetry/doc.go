// Package telemetry is surge's observability plumbing: structured logs
// (log/slog), OpenTelemetry tracing with an optional OTLP exporter, the HTTP
// middleware that gives every request an id and measures it per workload,
// and the process metrics Prometheus scrapes beside the workloads' own.
//
// The middleware sits in front of the ledger's hot path, so it is built to
// cost well under a microsecond and no allocation per request while tracing
// is off (BenchmarkMiddleware).
package telemetry
