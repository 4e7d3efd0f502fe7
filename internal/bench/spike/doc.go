// Package spike is the ticketing flash-sale scenario, `surge bench spike`:
// many VUs reserving seats of a few events at once, each POST followed by
// a long-poll GET, then every sale checked against the server's seat
// maps for double bookings.
package spike
