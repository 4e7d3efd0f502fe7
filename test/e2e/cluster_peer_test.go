package e2e

import (
	"crypto/tls"
	"regexp"
	"testing"
)

// peerLinksLine finds a node's peer address in its log.
var peerLinksLine = regexp.MustCompile(`"cluster: peer links" addr=(\S+)`)

// peerAddr is the address node s takes peer links on.
func peerAddr(t *testing.T, s *server) string {
	t.Helper()
	m := peerLinksLine.FindStringSubmatch(s.out.String())
	if m == nil {
		t.Fatalf("%s logged no peer address", s.name)
	}
	return m[1]
}

// refusesStrangers proves that node s's peer port refuses, in the TLS
// handshake, a client that shows no certificate or one no node of the
// cluster published: such a client cannot get a command to the node.
func refusesStrangers(t *testing.T, s *server) {
	addr := peerAddr(t, s)
	pki := newTestPKI(t, "stranger")
	stranger := pki.clientTLS(t, new(pki.issue(t, "stranger", "", "", "127.0.0.1")))
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "a certificate of no node": stranger.Certificates} {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, Certificates: certs, NextProtos: []string{"h2"}})
		if err == nil {
			// TLS 1.3: the server checks the client's certificate after the
			// client's side of the handshake; its refusal comes as an alert.
			_, err = conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
			if err == nil {
				_, err = conn.Read(make([]byte, 64))
			}
			_ = conn.Close()
		}
		if err == nil {
			t.Fatalf("%s: the peer port of %s answered a client with %s", s.name, addr, name)
		}
		t.Logf("%s: a client with %s is refused: %v", s.name, name, err)
	}
}

// peerReplies sums, over nodes, the replies that came back over peer
// links.
func peerReplies(t *testing.T, nodes ...*server) float64 {
	var sum float64
	for _, s := range nodes {
		for _, m := range scrapeMetrics(t, s)["surge_cluster_peer_answers_total"].GetMetric() {
			if m.GetLabel()[0].GetValue() == "reply" {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
