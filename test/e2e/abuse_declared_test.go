package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// declaredAttack is a request that declares a large body and sends a
// little of it, then waits: what a client does to hold a server's budgets
// for the bytes it promises rather than those it sends.
type declaredAttack struct {
	name string
	// head is sent first on a fresh connection (a request that routes the
	// connection to its server, answered before the attack), then attack.
	head, attack string
	sent         int // body bytes of attack that are sent
}

// declaredAttacks are the shapes of docs/OPERATIONS.md ("Limits"): on the
// connections net/http serves and on those fasthttp serves, with the key
// and without.
func declaredAttacks(key string) []declaredAttack {
	const body4 = 4<<20 - 128 // the largest a batch takes, bar a little
	some := strings.Repeat(" ", 8<<10)
	bearer := "Bearer " + key
	return []declaredAttack{
		{name: "net/http: wallet login declaring 8 MiB, no key",
			attack: headerOnly("/surge.wallet.v1.AuthService/Login", "", 8388480)},
		{name: "net/http: wallet login declaring 4 MiB, no key",
			attack: headerOnly("/surge.wallet.v1.AuthService/Login", "", body4) + some, sent: len(some)},
		{name: "net/http: batch after a page, keyed",
			head:   "GET /ui/ HTTP/1.1\r\nHost: surge\r\n\r\n",
			attack: headerOnly("/v1/transfers/batch", bearer, body4) + some, sent: len(some)},
		{name: "fasthttp: batch declaring 4 MiB, keyed", attack: headerOnly("/v1/transfers/batch", bearer, body4) + some, sent: len(some)},
		{name: "fasthttp: batch declaring 4 MiB, keyed, again", attack: headerOnly("/v1/transfers/batch", bearer, body4) + some, sent: len(some)},
		{name: "fasthttp: chunked batch, keyed",
			attack: "POST /v1/transfers/batch HTTP/1.1\r\nHost: surge\r\nAuthorization: " + bearer +
				"\r\nTransfer-Encoding: chunked\r\n\r\n2000\r\n" + some + "\r\n", sent: len(some)},
	}
}

// TestAbuseDeclaredBodiesHoldNothing: connections that declare bodies of
// up to the largest a route takes (or more) and send a few KiB of them
// hold only what they sent: a keyed client's transfers, /healthz and
// /readyz meanwhile get no refusal at all. Each server's shapes run
// against a server of their own.
func TestAbuseDeclaredBodiesHoldNothing(t *testing.T) {
	const key = "declared-key"
	for _, server := range []string{"net/http", "fasthttp"} {
		t.Run(server, func(t *testing.T) {
			s := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--api-key", key}, nil)
			s.awaitReady(key)
			openAccounts(t, s.c, "alice", "bob")
			fund(t, s.c, "alice", 1_000_000)
			// Every connection is routed to its server before any attack.
			var conns []*rawConn
			var attacks []declaredAttack
			for _, a := range declaredAttacks(key) {
				if strings.HasPrefix(a.name, server+":") {
					conns = append(conns, route(t, s, a))
					attacks = append(attacks, a)
				}
			}
			for i, a := range attacks {
				mount(t, s, conns[i], a)
			}
			if refused := keyedClientRefusals(s); len(refused) > 0 {
				t.Fatalf("during the attacks, %d refusals; first: %s", len(refused), refused[0])
			}
		})
	}
}

// route opens a's connection and sends its first request, if any.
func route(t *testing.T, s *server, a declaredAttack) *rawConn {
	t.Helper()
	rc := openRaw(t, s)
	if a.head != "" {
		rc.send(a.head)
		if resp, _, err := rc.reply(); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: the first request: %v %v", a.name, resp, err)
		}
	}
	return rc
}

// mount sends attack a on rc and waits until the server has taken it in:
// it holds the bytes sent, or has refused the request (or already cut it
// at the minimum data rate), or holds work for it, or has stopped
// serving.
func mount(t *testing.T, s *server, rc *rawConn, a declaredAttack) {
	t.Helper()
	before := frontState(t, s)
	rc.send(a.attack)
	poll(t, startTimeout, a.name+" to be taken in", func() (bool, string) {
		st := frontState(t, s)
		return st.refused || st.bodyBytes >= before.bodyBytes+float64(a.sent) && a.sent > 0 || st.work > 1 ||
			st.tooLarge > before.tooLarge || st.slow > before.slow, fmt.Sprintf("%+v", st)
	})
}

// keyedClientRefusals runs a keyed client's transfers and health checks,
// and returns what was refused.
func keyedClientRefusals(s *server) []string {
	var refused []string
	for i := range 20 {
		tr, r, err := s.c.Transfer(TransferReq{ID: fmt.Sprintf("during-%d", i), From: "alice", To: "bob", Amount: 1})
		if err != nil || r.Status != http.StatusCreated {
			refused = append(refused, fmt.Sprintf("transfer %d: %v %v %v", i, r, err, tr))
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			resp, err := s.c.raw(http.MethodGet, path, "", nil)
			if err != nil || resp.Status != http.StatusOK {
				refused = append(refused, fmt.Sprintf("GET %s: %v %v", path, resp, err))
			}
		}
	}
	return refused
}

// frontUse is what /metrics says the front door holds; refused is set when
// /metrics itself was refused.
type frontUse struct {
	bodyBytes, work, tooLarge, slow float64
	refused                         bool
}

func frontState(t *testing.T, s *server) frontUse {
	t.Helper()
	resp, err := s.c.raw(http.MethodGet, "/metrics", "", nil)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	if resp.Status == http.StatusServiceUnavailable {
		return frontUse{refused: true}
	}
	return frontUse{
		bodyBytes: sample(t, resp.Body, "surge_front_body_bytes"),
		work:      sample(t, resp.Body, "surge_front_work"),
		tooLarge:  sample(t, resp.Body, `surge_front_rejected_total{reason="body_too_large"}`),
		slow:      sample(t, resp.Body, `surge_front_rejected_total{reason="slow_request"}`),
	}
}

// TestAbuseSlowBodyCut: a body that arrives slower than --min-body-rate is
// cut (408) once the grace period is over, well before --header-timeout,
// on both servers.
func TestAbuseSlowBodyCut(t *testing.T) {
	s := start(t, t.TempDir(), "--min-body-rate", "1073741824", "--header-timeout", "10m")
	for _, path := range []string{"/v1/transfers", "/surge.wallet.v1.AuthService/Login"} {
		rc := openRaw(t, s)
		rc.send(headerOnly(path, "", 1000) + "{")
		resp, body, err := rc.reply()
		if err != nil {
			t.Fatalf("%s: no reply to a body that stalls: %v", path, err)
		}
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"request_timeout"`) {
			t.Fatalf("%s: got %s %s, want 408 request_timeout", path, resp.Status, body)
		}
		if !rc.closed() {
			t.Fatalf("%s: connection kept after a cut body", path)
		}
	}
	if n := metric(t, s, `surge_front_rejected_total{reason="slow_request"}`); n != 2 {
		t.Fatalf(`surge_front_rejected_total{reason="slow_request"} = %v, want 2`, n)
	}
}
