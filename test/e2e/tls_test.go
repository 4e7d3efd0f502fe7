package e2e

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/coder/websocket"
)

// startTLS starts surge serving TLS on a loopback port with cert, and
// gives it a client (srv.c) that trusts pki over HTTP/2 and shows
// clientCert when not nil.
func startTLS(t *testing.T, pki *testPKI, cert issued, clientCert *issued, extra ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(),
		"--tls-cert", cert.certFile, "--tls-key", cert.keyFile}, extra...)
	s := launch(t, args, nil)
	s.awaitListening()
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("listening line names %s, want https", s.url)
	}
	s.c = &Client{base: s.url, hc: httpsClient(pki.clientTLS(t, clientCert), true)}
	s.pollReady(s.name + " /readyz 200 over TLS")
	return s
}

// httpsClient speaks HTTP/2 over TLS when h2, else HTTP/1.1 only.
func httpsClient(cfg *tls.Config, h2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: h2, MaxIdleConnsPerHost: 16}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// TestTLSServesEveryProtocol: with --tls-cert and --tls-key the one port
// serves HTTP/1.1 and HTTP/2 (chosen by ALPN) to curl and Go, the
// ledger's native routes, gRPC to grpcurl and connect-go, gRPC-Web and
// the WebSocket, all over TLS.
func TestTLSServesEveryProtocol(t *testing.T) {
	pki := newTestPKI(t, "surge-test")
	srv := startTLS(t, pki, pki.issue(t, "server", "", "", "127.0.0.1", "localhost"), nil, walletArgs...)

	for _, v := range []struct{ flag, want string }{{"--http1.1", "1.1"}, {"--http2", "2"}} {
		out := command(t, "curl", "-sS", "--fail", "--cacert", pki.caFile, v.flag, "-o", "/dev/null", "-w", "%{http_version}", srv.url+"/readyz")
		if out != v.want {
			t.Errorf("curl %s /readyz: HTTP version %q, want %q", v.flag, out, v.want)
		}
	}
	if _, err := exec.Command("curl", "-sS", "--fail", srv.url+"/readyz").CombinedOutput(); err == nil {
		t.Errorf("curl without the test's CA trusted the server's certificate")
	}

	h1 := httpsClient(pki.clientTLS(t, nil), false)
	t.Cleanup(h1.CloseIdleConnections)
	for proto, hc := range map[string]*http.Client{"HTTP/1.1": h1, "HTTP/2.0": srv.c.hc} {
		c := &Client{base: srv.url, hc: hc}
		id := "tls-" + strings.ReplaceAll(proto, "/", "")
		if _, res, err := c.CreateAccount(NewAccount{ID: id, Currency: "USD"}); err != nil || res.Status != http.StatusCreated {
			t.Fatalf("%s: create account: %v %v", proto, err, res)
		}
		res, err := hc.Get(srv.url + "/v1/accounts/" + id)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Proto != proto {
			t.Errorf("GET account: %d over %s, want 200 over %s", res.StatusCode, res.Proto, proto)
		}
	}

	grpcurl := goTool(t, "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3")
	listed := command(t, grpcurl, "-cacert", pki.caFile, strings.TrimPrefix(srv.url, "https://"), "list")
	for _, svc := range []string{"grpc.health.v1.Health", "surge.wallet.v1.WalletService"} {
		if !strings.Contains(listed, svc) {
			t.Errorf("grpcurl list does not name %s:\n%s", svc, listed)
		}
	}

	for name, w := range map[string]*walletClients{
		"grpc":     newWalletClientsWith(t, srv.url, srv.c.hc, connect.WithGRPC()),
		"grpc-web": newWalletClientsWith(t, srv.url, h1, connect.WithGRPCWeb()),
	} {
		if m := w.register(t, "tls-"+name); w.balance(t, m) != 0 {
			t.Errorf("%s: a new user's balance is not 0", name)
		}
	}

	u := registerVMR(t, h1, srv.url)
	ws, res, err := websocket.Dial(ctxT(t), "wss"+strings.TrimPrefix(srv.url, "https")+"/ws?token="+url.QueryEscape(u.token), &websocket.DialOptions{HTTPClient: h1})
	if err != nil {
		t.Fatalf("wss: %v (%v)", err, res)
	}
	defer ws.CloseNow()
	if got := string(nextOf(t, ws, "ONLINE")); got != fmt.Sprint(u.id) {
		t.Errorf("first ONLINE over wss names %s, want %d", got, u.id)
	}
}

// registerVMR registers a VMR user through hc.
func registerVMR(t *testing.T, hc *http.Client, base string) vmrUser {
	t.Helper()
	name := fmt.Sprintf("tls_%06d", userSeq.Add(1))
	body, _ := json.Marshal(map[string]string{"username": name, "name": "TLS " + name, "password": "password1"})
	res, err := hc.Post(base+"/api/public/register", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var reply struct {
		Data struct {
			UserID   uint64 `json:"userId"`
			JWTToken string `json:"jwtToken"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&reply); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("register over TLS: %d %v", res.StatusCode, err)
	}
	return vmrUser{id: reply.Data.UserID, username: name, token: reply.Data.JWTToken}
}

// TestTLSMutualRefusesWithoutClientCert: with --tls-client-ca a client
// without a certificate, or with one from another authority, is refused
// in the handshake; one with a certificate of that authority is served.
func TestTLSMutualRefusesWithoutClientCert(t *testing.T) {
	pki := newTestPKI(t, "surge-test")
	client := pki.issue(t, "client", "", "", "client")
	srv := startTLS(t, pki, pki.issue(t, "server", "", "", "127.0.0.1"), &client, "--tls-client-ca", pki.caFile)

	curl := []string{"-sS", "--fail", "--cacert", pki.caFile, "-o", "/dev/null", "-w", "%{http_code}"}
	if out, err := exec.Command("curl", append(curl, srv.url+"/readyz")...).CombinedOutput(); err == nil {
		t.Errorf("curl without a client certificate was served: %s", out)
	}
	if out := command(t, "curl", append(curl, "--cert", client.certFile, "--key", client.keyFile, srv.url+"/readyz")...); out != "200" {
		t.Errorf("curl with a client certificate: %s, want 200", out)
	}
	other := newTestPKI(t, "another")
	stranger := other.issue(t, "stranger", "", "", "stranger")
	cfg := pki.clientTLS(t, &stranger)
	if res, err := httpsClient(cfg, true).Get(srv.url + "/readyz"); err == nil {
		res.Body.Close()
		t.Errorf("a client certificate from another authority was served: %d", res.StatusCode)
	}
}

// TestTLSRotationUnderLoad: replacing the certificate's files while
// clients open new connections and use an old one puts the new
// certificate in service without a restart and fails no request. The
// rotation renames the key first, so that for a moment the files do not
// match: the server keeps the old pair until they do.
func TestTLSRotationUnderLoad(t *testing.T) {
	pki := newTestPKI(t, "surge-test")
	old := pki.issue(t, "server", "", "", "127.0.0.1")
	srv := startTLS(t, pki, old, nil)

	load := newRotationLoad(srv.url, pki.clientTLS(t, nil), old.leaf.SerialNumber.String())
	load.run(4)
	load.awaitServed(200)

	next := pki.issue(t, "next", filepath.Join(pki.dir, "next.pem"), filepath.Join(pki.dir, "next-key.pem"), "127.0.0.1")
	for _, mv := range [][2]string{{next.keyFile, old.keyFile}, {next.certFile, old.certFile}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	load.awaitNewServed(200)
	load.stop()

	if f := load.failures(); len(f) > 0 {
		t.Fatalf("%d requests failed during rotation; first: %s", len(f), f[0])
	}
	if load.keptOld.Load() == 0 {
		t.Errorf("the connection opened before rotation served nothing")
	}
	t.Logf("%d requests on new connections (%d under the new certificate), %d on the connection opened before rotation",
		load.served.Load(), load.servedNew.Load(), load.keptOld.Load())
}

// rotationLoad opens a new TLS connection per request from several
// workers, and keeps one HTTP/2 connection busy throughout.
type rotationLoad struct {
	url, oldSerial    string
	cfg               *tls.Config
	served, servedNew atomic.Int64
	keptOld           atomic.Int64
	attempts          atomic.Int64 // requests begun, served or not
	done              chan struct{}
	wg                sync.WaitGroup
	mu                sync.Mutex
	failed            []string
	progress          chan struct{} // a tick per request made
}

// maxRotationRequests bounds the load, should the new certificate never
// come into service or the server stop answering.
const maxRotationRequests = 20000

func newRotationLoad(url string, cfg *tls.Config, oldSerial string) *rotationLoad {
	return &rotationLoad{url: url, cfg: cfg, oldSerial: oldSerial, done: make(chan struct{}), progress: make(chan struct{}, 1)}
}

func (l *rotationLoad) run(workers int) {
	for range workers {
		fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: l.cfg.Clone(), DisableKeepAlives: true}}
		l.wg.Go(func() { l.loop(fresh, false) })
	}
	kept := httpsClient(l.cfg.Clone(), true)
	l.wg.Go(func() { l.loop(kept, true) })
}

func (l *rotationLoad) loop(hc *http.Client, kept bool) {
	for l.attempts.Add(1) <= maxRotationRequests {
		select {
		case <-l.done:
			return
		default:
		}
		l.request(hc, kept)
		select {
		case l.progress <- struct{}{}:
		default:
		}
	}
}

// request makes one request and counts it as served or failed.
func (l *rotationLoad) request(hc *http.Client, kept bool) {
	res, err := hc.Get(l.url + "/readyz")
	if err != nil {
		l.fail(err.Error())
		return
	}
	res.Body.Close()
	serial := res.TLS.PeerCertificates[0].SerialNumber.String()
	switch {
	case res.StatusCode != http.StatusOK:
		l.fail(res.Status)
	case kept && serial != l.oldSerial:
		l.fail("the connection opened before rotation was replaced")
	case kept:
		l.keptOld.Add(1)
	default:
		l.served.Add(1)
		if serial != l.oldSerial {
			l.servedNew.Add(1)
		}
	}
}

func (l *rotationLoad) fail(why string) {
	l.mu.Lock()
	l.failed = append(l.failed, why)
	l.mu.Unlock()
}

func (l *rotationLoad) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// awaitServed waits until n requests were served on new connections.
func (l *rotationLoad) awaitServed(n int64) { l.await(func() bool { return l.served.Load() >= n }) }

// awaitNewServed waits until n requests were served under the new
// certificate.
func (l *rotationLoad) awaitNewServed(n int64) {
	l.await(func() bool { return l.servedNew.Load() >= n })
}

// await waits on the workers' progress until cond holds or the load's
// bound is reached.
func (l *rotationLoad) await(cond func() bool) {
	for !cond() && l.attempts.Load() < maxRotationRequests {
		<-l.progress
	}
}

func (l *rotationLoad) stop() {
	close(l.done)
	l.wg.Wait()
}

// command runs name with args and returns its trimmed standard output,
// failing the test if it fails.
func command(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// goTool installs a Go command at a pinned version (package@version) from
// the module proxy and returns its path; outside CI it skips the test if
// that fails.
func goTool(t *testing.T, pkg string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "install", pkg)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("go install %s: %v\n%s", pkg, err, out)
		}
		t.Fatalf("go install %s: %v\n%s", pkg, err, out)
	}
	return filepath.Join(dir, filepath.Base(strings.SplitN(pkg, "@", 2)[0]))
}

// TestHealthcheck: `surge healthcheck` exits 0 for a ready server, over
// TLS when given the server's --tls-cert (through the same SURGE_*
// variables as serve), and 1, saying why, for a port nothing serves.
func TestHealthcheck(t *testing.T) {
	pki := newTestPKI(t, "surge-test")
	cert := pki.issue(t, "server", "", "", "127.0.0.1")
	srv := startTLS(t, pki, cert, nil)
	check := exec.Command(binPath, "healthcheck")
	check.Env = append(childEnv(), "SURGE_ADDR="+strings.TrimPrefix(srv.url, "https://"), "SURGE_TLS_CERT="+cert.certFile, "SURGE_TLS_KEY="+cert.keyFile)
	if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), "ready") {
		t.Errorf("healthcheck of a ready TLS server: %v %s", err, out)
	}
	out, err := exec.Command(binPath, "healthcheck", "--addr", freeLoopbackAddr(t)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "healthcheck") {
		t.Errorf("healthcheck of a port nothing serves: %v %s", err, out)
	}
}

// TestTLSMaxConnsSilentClientHoldsNoAccept: past --max-conns over TLS, a
// client that connects and never sends its hello is closed at once, and
// the accept loop goes on: once a slot frees up, a new client is served.
// (Answering it the plaintext 503 would run its handshake in the accept
// loop, waiting on a hello that never comes.)
func TestTLSMaxConnsSilentClientHoldsNoAccept(t *testing.T) {
	const limit = 4
	pki := newTestPKI(t, "surge-test")
	srv := startTLS(t, pki, pki.issue(t, "server", "", "", "127.0.0.1"), nil, "--max-conns", strconv.Itoa(limit), "--max-conns-per-client", strconv.Itoa(limit))
	srv.c.hc.CloseIdleConnections()
	addr := strings.TrimPrefix(srv.url, "https://")
	var held []*tls.Conn
	for range limit {
		c, err := tls.Dial("tcp", addr, pki.clientTLS(t, nil))
		if err != nil {
			t.Fatalf("a connection under the limit: %v", err)
		}
		held = append(held, c)
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_ = silent.SetReadDeadline(time.Now().Add(startTimeout)) // a bound, should the server never close it
	if n, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a silent connection past --max-conns: read %d, %v; want it closed at once", n, err)
	}
	for _, c := range held {
		_ = c.Close()
	}
	poll(t, startTimeout, "a client served once a slot frees up", func() (bool, string) {
		resp, err := srv.c.raw(http.MethodGet, "/readyz", "", nil)
		if err != nil {
			return false, err.Error()
		}
		return resp.Status == http.StatusOK, resp.String()
	})
}
