// Package benchtest holds the fake-server helpers the load lab's tests share.
package benchtest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Problem answers status with a problem details document carrying code, as
// surge does.
func Problem(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"https://surge.dev/problems/%s","status":%d,"code":%q,"detail":"injected %s"}`, code, status, code, code)
}
