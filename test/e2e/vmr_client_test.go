package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
	"github.com/surge-dev/surge/internal/gen/vmr/vmrpbconnect"
)

// vmrClients are clients of VMR chat's two gRPC services over one
// transport.
type vmrClients struct {
	wallet vmrpbconnect.WalletServiceClient
	friend vmrpbconnect.FriendServiceClient
}

// vmrTransports are the ways VMR's clients call: gRPC (h2c, served by
// grpc-go), gRPC-Web binary, and gRPC-Web text as the grpc-web JavaScript
// client sends it.
func vmrTransports(t testing.TB, url string) map[string]vmrClients {
	t.Helper()
	mk := func(hc *http.Client, opts ...connect.ClientOption) vmrClients {
		t.Cleanup(hc.CloseIdleConnections)
		return vmrClients{vmrpbconnect.NewWalletServiceClient(hc, url, opts...), vmrpbconnect.NewFriendServiceClient(hc, url, opts...)}
	}
	return map[string]vmrClients{
		"grpc":          mk(h2cClient(), connect.WithGRPC()),
		"grpc-web":      mk(&http.Client{}, connect.WithGRPCWeb()),
		"grpc-web-text": mk(&http.Client{Transport: textMode{http.DefaultTransport}}, connect.WithGRPCWeb()),
	}
}

// textMode turns a binary gRPC-Web client into a text-mode one on the
// wire: requests go out in base64 as application/grpc-web-text and
// replies, checked to be text mode, come back decoded.
type textMode struct{ next http.RoundTripper }

func (m textMode) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Content-Type", "application/grpc-web-text")
	req.Header.Set("Accept", "application/grpc-web-text")
	enc := base64.StdEncoding.EncodeToString(body)
	req.Body, req.ContentLength = io.NopCloser(strings.NewReader(enc)), int64(len(enc))
	res, err := m.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ct := res.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/grpc-web-text") {
		res.Body.Close()
		return nil, &textModeError{ct}
	}
	text, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	var raw []byte
	for i := 0; i+4 <= len(text); i += 4 { // padded chunks, four characters at a time
		b, err := base64.StdEncoding.DecodeString(string(text[i : i+4]))
		if err != nil {
			return nil, err
		}
		raw = append(raw, b...)
	}
	res.Header.Set("Content-Type", "application/grpc-web+proto")
	res.Body, res.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	return res, nil
}

type textModeError struct{ got string }

func (e *textModeError) Error() string { return "reply content type " + e.got + ", want grpc-web-text" }

// vmrReq is a request carrying a VMR token in x-jwt-token.
func vmrReq[T any](token string, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	if token != "" {
		req.Header().Set("x-jwt-token", token)
	}
	return req
}

// vmrUser is a user as VMR's REST API signed them in.
type vmrUser struct {
	id       uint64
	username string
	token    string
}

// restReply is VMR's REST reply.
type restReply struct {
	Status       int
	ResponseCode string          `json:"responseCode"`
	Message      string          `json:"message"`
	Data         json.RawMessage `json:"data"`
}

// vmrREST calls a VMR REST route with a JSON body (nil: none) and a
// bearer token (empty: none).
func vmrREST(t testing.TB, base, method, path, token string, body any) restReply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := restReply{Status: res.StatusCode}
	if len(b) > 0 && json.Unmarshal(b, &out) != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", method, path, res.StatusCode, b)
	}
	return out
}

// vmrRegister registers a user over VMR's REST API (password password1).
func vmrRegister(t testing.TB, base, prefix string) vmrUser {
	t.Helper()
	name := fmt.Sprintf("%s_%06d", prefix, userSeq.Add(1))
	r := vmrREST(t, base, http.MethodPost, "/api/public/register", "", map[string]string{"username": name, "name": "VMR " + name, "password": "password1"})
	if r.Status != http.StatusCreated {
		t.Fatalf("register %s: %d %+v", name, r.Status, r)
	}
	var d struct {
		UserID   uint64 `json:"userId"`
		JWTToken string `json:"jwtToken"`
	}
	if err := json.Unmarshal(r.Data, &d); err != nil || d.UserID == 0 || d.JWTToken == "" {
		t.Fatalf("register %s: data %s", name, r.Data)
	}
	return vmrUser{id: d.UserID, username: name, token: d.JWTToken}
}

// wsMessage is a VMR WebSocket message.
type wsMessage struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// wsChat is a chat message as VMR sends it.
type wsChat struct {
	ID         uint64 `json:"id"`
	SenderID   int64  `json:"senderId"`
	ReceiverID int64  `json:"receiverId"`
	Message    string `json:"message"`
	Timestamp  int64  `json:"timestamp"`
	Type       string `json:"type"`
}

// vmrSocket opens VMR's WebSocket as the token's user.
func vmrSocket(t testing.TB, base, token string) *websocket.Conn {
	t.Helper()
	c, res, err := websocket.Dial(ctxT(t), "ws"+strings.TrimPrefix(base, "http")+"/ws?token="+token, nil)
	if err != nil {
		t.Fatalf("websocket: %v (%v)", err, res)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// vmrSocketReady opens u's WebSocket and reads it up to u's own ONLINE,
// which the server sends once the socket gets u's events: nothing
// committed after vmrSocketReady returns is missed.
func vmrSocketReady(t testing.TB, base string, u vmrUser) *websocket.Conn {
	t.Helper()
	c := vmrSocket(t, base, u.token)
	for string(nextOf(t, c, "ONLINE")) != strconv.FormatUint(u.id, 10) {
	}
	return c
}

// nextOf reads c until a message of type typ (others are skipped) and
// returns its data.
func nextOf(t testing.TB, c *websocket.Conn, typ string) json.RawMessage {
	t.Helper()
	for {
		_, b, err := c.Read(ctxT(t))
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		var m wsMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("not JSON: %q", b)
		}
		if m.Type == typ {
			return m.Data
		}
	}
}

// nextEvent reads c until a message that is not ONLINE or OFFLINE.
func nextEvent(t testing.TB, c *websocket.Conn) wsMessage {
	t.Helper()
	for {
		_, b, err := c.Read(ctxT(t))
		if err != nil {
			t.Fatalf("waiting for a message: %v", err)
		}
		var m wsMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("not JSON: %q", b)
		}
		if m.Type != "ONLINE" && m.Type != "OFFLINE" {
			return m
		}
	}
}

// sendChat sends a CHAT message to a user over c, as VMR's app does.
func sendChat(t testing.TB, c *websocket.Conn, to vmrUser, text string) {
	t.Helper()
	msg := map[string]any{"type": "CHAT", "data": map[string]any{"receiverId": to.id, "message": text}}
	if err := wsjson.Write(ctxT(t), c, msg); err != nil {
		t.Fatal(err)
	}
}

// chatOf reads c until a message of type typ and decodes it as a chat
// message.
func chatOf(t testing.TB, c *websocket.Conn, typ string) wsChat {
	t.Helper()
	var m wsChat
	if err := json.Unmarshal(nextOf(t, c, typ), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// wantVMRError checks a reply's error field.
func wantVMRError(t testing.TB, what string, got *vmrpb.Error, code vmrpb.ErrorCode) {
	t.Helper()
	if got == nil || got.Code != code {
		t.Errorf("%s: error %v, want %v", what, got, code)
	}
}
