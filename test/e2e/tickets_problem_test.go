package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
)

// The ticketing routes answer errors as problems of the ledger's shape:
// the same members, the type naming the code under the ledger's URI.
func TestTicketProblemsHaveTheLedgersShape(t *testing.T) {
	srv := start(t, t.TempDir())
	shape := func(path string) map[string]any {
		t.Helper()
		r, err := srv.c.raw(http.MethodGet, path, "", nil)
		if err != nil || r.Status != http.StatusNotFound || !isProblemJSON(r) {
			t.Fatalf("GET %s: %v %v", path, r, err)
		}
		var p map[string]any
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		if p["type"] != "https://surge.dev/problems/"+p["code"].(string) {
			t.Errorf("GET %s: type %v for code %v", path, p["type"], p["code"])
		}
		return p
	}
	ledger, event := shape("/v1/accounts/nobody"), shape("/v1/event/nothing")
	if ledger["title"] != "Account not found" || event["title"] != "Event not found" {
		t.Errorf("titles %q and %q, want each code in words", ledger["title"], event["title"])
	}
	for k := range ledger {
		if _, ok := event[k]; !ok {
			t.Errorf("the ticket problem lacks the ledger's %q: %v", k, event)
		}
	}
	for k := range event {
		if _, ok := ledger[k]; !ok {
			t.Errorf("the ticket problem has %q, which the ledger's lacks: %v", k, event)
		}
	}
}
