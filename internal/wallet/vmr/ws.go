package vmr

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/http"
	"strconv"
	"sync"

	"github.com/coder/websocket"

	"github.com/surge-dev/surge/internal/front"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// WebSocketPath is where VMR's WebSocket is served (VMR had a port of its
// own): ws://host:port/ws?token=<jwt>.
const WebSocketPath = "/ws"

// The types of WebSocket messages, VMR's.
const (
	typeChat     = "CHAT"          // to the receiver of a message; from a client: send one
	typeSendBack = "SEND_BACK"     // to the sender of a message, once it is stored
	typeOnline   = "ONLINE"        // to everyone: a user connected (in a cluster: here, or came online on another node)
	typeOffline  = "OFFLINE"       // to everyone: a user's last connection closed (in a cluster: no node holds a stream of theirs)
	typeAccept   = "ACCEPT"        // to a requester: their friend request was accepted
	typeRemove   = "REMOVE_FRIEND" // to a friend: the other removed them
	typeTransfer = "TRANSFER"      // a chat message's type for a transfer
)

// outboxSize is how many messages a connection may fall behind before it
// is closed: nothing waits for a slow client.
const outboxSize = 256

// wsMessage is one WebSocket message, either way.
type wsMessage struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// chatMessage is a message as VMR's clients read it.
type chatMessage struct {
	ID         uint64 `json:"id"`
	SenderID   int64  `json:"senderId"`
	ReceiverID int64  `json:"receiverId"`
	Message    string `json:"message"`
	Timestamp  int64  `json:"timestamp"` // Unix seconds
	Type       string `json:"type"`
	TransferID int64  `json:"transferId"`
}

// chatMessageOf converts a surge message: a transfer's text is
// "<amount>;<message>", as VMR wrote it.
func chatMessageOf(m *walletv1.Message) chatMessage {
	c := chatMessage{
		ID: m.Id, SenderID: int64(m.FromUserId), ReceiverID: int64(m.ToUserId),
		Message: m.Text, Timestamp: m.SentAt.GetSeconds(), Type: typeChat,
	}
	if m.Type == walletv1.Message_TRANSFER {
		c.Type, c.Message = typeTransfer, strconv.FormatInt(m.Amount, 10)+";"+m.Text
		c.TransferID = transferNumber(m.TransferId)
	}
	return c
}

// transferNumber is a positive int64 standing for a transfer id, stable
// across calls: VMR numbered transfers, surge's transfer ids are strings.
func transferNumber(transferID string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(transferID))
	return int64(h.Sum64() >> 1)
}

// socket is one open WebSocket.
type socket struct {
	user   uint64
	outbox chan []byte
	full   chan struct{} // closed when the outbox overflowed
	once   sync.Once
}

// queue sends b unless the socket is too far behind, which closes it.
func (s *socket) queue(b []byte) bool {
	select {
	case s.outbox <- b:
		return true
	default:
		s.once.Do(func() { close(s.full) })
		return false
	}
}

// sockets are the open WebSockets by user.
type sockets struct {
	mu     sync.Mutex
	byUser map[uint64]map[*socket]struct{}
	// cluster is set in cluster mode, where OFFLINE and the ONLINE of
	// other nodes' users follow the cluster-wide presence
	// (presenceChanged).
	cluster bool
}

func newSockets() sockets { return sockets{byUser: map[uint64]map[*socket]struct{}{}} }

// add registers s and tells everyone its user is online.
func (ss *sockets) add(s *socket) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byUser[s.user] == nil {
		ss.byUser[s.user] = map[*socket]struct{}{}
	}
	ss.byUser[s.user][s] = struct{}{}
	ss.broadcastLocked(wsMessage{Type: typeOnline, Data: s.user})
}

// remove unregisters s and, if it was its user's last, tells everyone the
// user is offline.
func (ss *sockets) remove(s *socket) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.byUser[s.user][s]; !ok {
		return
	}
	delete(ss.byUser[s.user], s)
	if len(ss.byUser[s.user]) == 0 {
		delete(ss.byUser, s.user)
		if !ss.cluster {
			ss.broadcastLocked(wsMessage{Type: typeOffline, Data: s.user})
		}
	}
}

// presenceChanged tells this node's sockets that user came online on
// another node (one of this node's is told by add) or went offline across
// the cluster.
func (ss *sockets) presenceChanged(user uint64, online, here bool) {
	if online && here {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	typ := typeOffline
	if online {
		typ = typeOnline
	}
	ss.broadcastLocked(wsMessage{Type: typ, Data: user})
}

func (ss *sockets) broadcastLocked(m wsMessage) {
	b, _ := json.Marshal(m)
	for _, conns := range ss.byUser {
		for s := range conns {
			s.queue(b)
		}
	}
}

// serveWebSocket authenticates ?token=, then relays the user's messages
// both ways until either side closes.
func (f *Face) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	user, ok := f.authenticate(r.URL.Query().Get("token"))
	if !ok {
		http.Error(w, "missing or invalid token", http.StatusUnauthorized)
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: f.origins, InsecureSkipVerify: f.anyOrig})
	if err != nil {
		return // Accept has answered
	}
	defer conn.CloseNow()
	front.Park(r.Context())
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s := &socket{user: user, outbox: make(chan []byte, outboxSize), full: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		f.relayEvents(ctx, s)
	}()
	go func() {
		defer cancel()
		f.readMessages(ctx, conn, user)
	}()
	writeAll(ctx, conn, s)
	cancel()
	<-done
	conn.Close(websocket.StatusNormalClosure, "")
}

// relayEvents subscribes to the user's events (which marks them online)
// and queues each on s as VMR's message, if it has one.
func (f *Face) relayEvents(ctx context.Context, s *socket) {
	opened := func() error { f.sockets.add(s); return nil }
	defer f.sockets.remove(s)
	err := f.local.Subscribe(ctx, s.user, opened, func(ev *walletv1.Event) error {
		m, ok := socketMessage(s.user, ev)
		if !ok {
			return nil
		}
		b, _ := json.Marshal(m)
		if !s.queue(b) {
			return context.Canceled
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		f.log.Debug("vmr: websocket events ended", "user", s.user, "err", err)
	}
}

// socketMessage is VMR's WebSocket message for user of ev: SEND_BACK for a
// message they sent, CHAT for one they received, ACCEPT or REMOVE_FRIEND
// (with the other user's id) when a friend request of theirs was accepted
// or a friend removed them. VMR's server sent nothing for other changes.
func socketMessage(user uint64, ev *walletv1.Event) (wsMessage, bool) {
	if m := ev.GetMessage(); m != nil {
		if m.FromUserId == user {
			return wsMessage{Type: typeSendBack, Data: chatMessageOf(m)}, true
		}
		return wsMessage{Type: typeChat, Data: chatMessageOf(m)}, true
	}
	fr := ev.GetFriend()
	peer := map[string]uint64{"userId": fr.GetUser().GetId()}
	switch fr.GetStatus() {
	case walletv1.Friend_FRIEND:
		return wsMessage{Type: typeAccept, Data: peer}, true
	case walletv1.Friend_UNFRIENDED:
		return wsMessage{Type: typeRemove, Data: peer}, true
	}
	return wsMessage{}, false
}

// writeAll writes s's queued messages until ctx ends or s overflows.
func writeAll(ctx context.Context, conn *websocket.Conn, s *socket) {
	for {
		select {
		case b := <-s.outbox:
			if conn.Write(ctx, websocket.MessageText, b) != nil {
				return
			}
		case <-s.full:
			return
		case <-ctx.Done():
			return
		}
	}
}

// clientMessage is what a client sends: {"type":"CHAT","data":{...}}.
type clientMessage struct {
	Type string `json:"type"`
	Data struct {
		ReceiverID int64  `json:"receiverId"`
		Message    string `json:"message"`
	} `json:"data"`
}

// readMessages sends the client's CHAT messages as the user. A message
// that cannot be sent (not a friend, empty) is dropped, as VMR did; the
// sender sees no SEND_BACK.
func (f *Face) readMessages(ctx context.Context, conn *websocket.Conn, user uint64) {
	conn.SetReadLimit(maxMessageBytes)
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m clientMessage
		if typ != websocket.MessageText || json.Unmarshal(b, &m) != nil || m.Type != typeChat || m.Data.ReceiverID <= 0 {
			continue
		}
		err = f.send(ctx, user, m)
		if err != nil {
			f.log.Debug("vmr: websocket message not sent", "user", user, "to", m.Data.ReceiverID, "err", err)
		}
	}
}

// errBusy drops a chat message the server is too busy to take: a
// WebSocket waits without a place among the requests in progress
// (front.Park), and each message it carries takes one for its work.
var errBusy = errors.New("vmr: the server is at capacity")

// send sends m as user, within a place among the requests in progress.
func (f *Face) send(ctx context.Context, user uint64, m clientMessage) error {
	done, ok := front.Work(ctx)
	if !ok {
		return errBusy
	}
	defer done()
	_, err := f.local.SendMessage(ctx, user, &walletv1.SendMessageRequest{ToUserId: uint64(m.Data.ReceiverID), Text: m.Data.Message})
	return err
}
