// Package e2e is the black-box end-to-end suite of surge's ledger. It builds
// the real binary, runs it as a process on a loopback port and drives it over
// real HTTP, exactly as a client would: no mocks, no internal packages.
//
// TestMain builds ./cmd/surge once (or uses the binary named by SURGE_BIN).
// The long tests (conservation under concurrency, crash recovery) are skipped
// by `go test -short`. E2E_SEED fixes the random choices of those tests; each
// run logs the seed it used.
package e2e
