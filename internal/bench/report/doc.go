// Package report holds the outcome of a load-lab run and its shapes:
// Result (what every scenario fills, with the spike's and kv's own parts),
// the k6/wrk2/ghz-style summary (WriteSummary), JSON (WriteJSON,
// ReadJSON), Markdown (WriteMarkdown), a self-contained HTML page
// (WriteHTML), the comparison of two results (Compare), verdicts against
// the targets of docs/BENCHMARKS.md, and Progress, the line a second
// printed while a run goes.
package report
