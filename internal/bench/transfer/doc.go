// Package transfer is the ledger's load scenario, `surge bench transfer`:
// k6's looping VUs posting transfers (or batches of them) between funded
// accounts, judged against its target (docs/BENCHMARKS.md).
package transfer
