// Package e2e is the black-box end-to-end suite of surge. It builds
// the real binary, runs it as a process on a loopback port and drives it over
// real HTTP, exactly as a client would: no mocks, no internal packages. The
// contract it checks is docs/API.md and its "Promises".
//
// TestMain builds ./cmd/surge once, or uses the binary named by SURGE_BIN.
// The long tests (conservation under concurrency, and the two crash tests)
// are skipped by `go test -short`. E2E_SEED fixes the random choices of the
// tests that make them; each run logs the seed it used.
//
// The tests:
//   - TestLedgerLifecycle: accounts, funding, transfers, idempotency (also
//     under concurrent duplicates), refusals, overdraft, system accounts,
//     history paging.
//   - TestTwoPhase: holds, full and partial posts, voids, expiry.
//   - TestBatch: non-atomic and atomic batches, duplicate ids, size limits.
//   - TestBadInput: every kind of malformed request gets its documented
//     status and code, and changes nothing.
//   - TestLinearizableReads: what one read has shown, a later read shows.
//   - TestConservationUnderConcurrency: random concurrent transfers across
//     shards conserve money and agree with the histories.
//   - TestCrashRecovery, TestCrashTwoPhase: kill -9 under load loses nothing
//     acknowledged and leaves nothing half done.
//   - TestRestartPersistence: state survives SIGTERM and kill -9 restarts.
//   - TestRefusesPublicAddressWithoutKey, TestAPIKey: security defaults.
//   - TestTicketLifecycle: events, RANDOM and SELF_PICK reservations,
//     long-polls, ?wait, payment, cancellation, expiry and resale.
//   - TestTicketBadInput: malformed requests are refused and change nothing;
//     what ticket-master reports as failed reservations fails with its codes.
//   - TestTicketSpikeSellsExactlyTheCapacity: many clients over few seats
//     sell every seat once and decide every reservation.
//   - TestTicketCrashDuringSpike: kill -9 during a spike keeps every seat
//     answered RESERVED, and seat maps agree with availability.
//   - The TestKV tests: the highload-dht course's assertions on /v0, kill -9
//     under concurrent writes, and porcupine-checked linearizability across
//     a kill and restart.
package e2e
