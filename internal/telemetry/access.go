package telemetry

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// OperatorOnly serves h to the server's operators only: loopback clients,
// and others presenting apiKey, as a bearer token or as the password of
// HTTP Basic authentication (which a browser prompts for by itself, so the
// dashboard opens in one). Profiles and the dashboard's view of accounts
// and sales are not for everyone who can reach the port.
func OperatorOnly(h http.Handler, apiKey string) http.Handler {
	var keyHash [sha256.Size]byte
	if apiKey != "" {
		keyHash = sha256.Sum256([]byte(apiKey))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fromLoopback(r) || (apiKey != "" && presentsKey(r, keyHash)) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="surge", charset="UTF-8"`)
		http.Error(w, "served to loopback clients, or with the API key (as a bearer token or the Basic password)", http.StatusUnauthorized)
	})
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// presentsKey compares digests in constant time, so that not even the
// key's length leaks through timing.
func presentsKey(r *http.Request, keyHash [sha256.Size]byte) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		_, got, ok = r.BasicAuth()
	}
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], keyHash[:]) == 1
}
