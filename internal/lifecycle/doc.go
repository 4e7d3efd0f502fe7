// Package lifecycle is what a surge process does around serving: it
// listens, or takes over the listener a restart in place handed it
// (Listen); answers on the port while its storage recovers (ServeStarting);
// checks the stores' table files in the background (CheckTables); and,
// after a store's disk failed a write, restarts itself in place by exec
// once the disk takes writes again (StorageFaults).
package lifecycle
