package vmr

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// VMR's REST replies: {"responseCode": ..., "message": ..., "data": ...},
// each field left out when empty.
type restReply struct {
	ResponseCode string `json:"responseCode,omitempty"`
	Message      string `json:"message,omitempty"`
	Data         any    `json:"data,omitempty"`
}

// Response codes, VMR's.
const (
	codeUsernameExisted    = "USERNAME_EXISTED"
	codePasswordInvalid    = "PASSWORD_INVALID"
	codeUsernameNotExisted = "USERNAME_NOT_EXISTED"
	codeCredentialsInvalid = "CREDENTIALS_NOTVALID"
)

// chatPage is how many messages a chat page holds, VMR's.
const chatPage = 20

// maxBody bounds a REST request body: a username, a name and a password.
const maxBody = 4 << 10

// vmrUsername is VMR's rule for usernames: a letter, then 7 or more
// letters, digits, '_', '|' or '.'.
var vmrUsername = regexp.MustCompile(`^[a-zA-Z][\w|.]{7,}$`)

func writeJSON(w http.ResponseWriter, status int, body restReply) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

var notAllowed = restReply{Message: "Method not allowed"}

// serveREST serves /api/public/* and /api/protected/*.
func (f *Face) serveREST(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/api/public/register" || p == "/api/public/login":
		if r.Method != http.MethodPost {
			writeJSON(w, http.StatusMethodNotAllowed, notAllowed)
			return
		}
		if p == "/api/public/register" {
			f.register(w, r)
		} else {
			f.login(w, r)
		}
	case strings.HasPrefix(p, "/api/protected/"):
		f.protected(w, r)
	default:
		http.NotFound(w, r)
	}
}

type credentials struct {
	Username string `json:"username"`
	Name     string `json:"name"`
	Password string `json:"password"`
}

func readCredentials(r *http.Request) (credentials, bool) {
	var c credentials
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	return c, err == nil && len(b) <= maxBody && json.Unmarshal(b, &c) == nil
}

// register creates the user: 201 with their id and a token.
func (f *Face) register(w http.ResponseWriter, r *http.Request) {
	c, ok := readCredentials(r)
	if !ok || !vmrUsername.MatchString(c.Username) || len(c.Password) < 8 || c.Name == "" {
		writeJSON(w, http.StatusBadRequest, restReply{ResponseCode: codeCredentialsInvalid, Message: "Username or password not valid"})
		return
	}
	res, err := f.local.Register(r.Context(), r.RemoteAddr, &walletv1.RegisterRequest{Username: c.Username, Name: c.Name, Password: c.Password})
	switch {
	case err == nil:
		writeJSON(w, http.StatusCreated, restReply{Data: signedIn(res.User.Id, res.Token)})
	case codeOf(err) == connect.CodeAlreadyExists:
		writeJSON(w, http.StatusConflict, restReply{ResponseCode: codeUsernameExisted, Message: "Username existed"})
	case codeOf(err) == connect.CodeInvalidArgument:
		writeJSON(w, http.StatusBadRequest, restReply{ResponseCode: codeCredentialsInvalid, Message: messageOf(err)})
	default:
		f.internalError(w, "register", err)
	}
}

func signedIn(id uint64, token string) map[string]any {
	return map[string]any{"userId": id, "jwtToken": token}
}

// login checks the password: 200 with the user's id and a token, or 401.
func (f *Face) login(w http.ResponseWriter, r *http.Request) {
	c, ok := readCredentials(r)
	if !ok {
		writeJSON(w, http.StatusBadRequest, restReply{ResponseCode: codeCredentialsInvalid, Message: "malformed body"})
		return
	}
	if _, known := f.local.UserByName(c.Username); !known {
		writeJSON(w, http.StatusUnauthorized, restReply{ResponseCode: codeUsernameNotExisted})
		return
	}
	res, err := f.local.Login(r.Context(), r.RemoteAddr, &walletv1.LoginRequest{Username: c.Username, Password: c.Password})
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, restReply{Data: signedIn(res.User.Id, res.Token)})
	case codeOf(err) == connect.CodeUnauthenticated:
		writeJSON(w, http.StatusUnauthorized, restReply{ResponseCode: codePasswordInvalid})
	case codeOf(err) == connect.CodeResourceExhausted:
		w.Header().Set("Retry-After", "60")
		writeJSON(w, http.StatusTooManyRequests, restReply{ResponseCode: codePasswordInvalid, Message: messageOf(err)})
	default:
		f.internalError(w, "login", err)
	}
}

func (f *Face) internalError(w http.ResponseWriter, what string, err error) {
	f.log.Error("vmr: "+what, "err", err)
	writeJSON(w, http.StatusInternalServerError, restReply{Message: "internal error"})
}

// protected serves the routes that need "Authorization: Bearer <jwt>".
func (f *Face) protected(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	user, ok := f.authenticate(token)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, restReply{Message: "Unauthorized"})
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/api/protected/")
	switch {
	case rest == "logout":
		if r.Method != http.MethodPost {
			writeJSON(w, http.StatusMethodNotAllowed, notAllowed)
			return
		}
		// A token that verified has an expiry; keep it refused that long.
		f.revoked.revoke(token, time.Now().Add(tokenLifetimeBound))
		writeJSON(w, http.StatusOK, restReply{Message: "Logout successfully"})
	case strings.HasPrefix(rest, "chat/"):
		if r.Method != http.MethodGet {
			writeJSON(w, http.StatusMethodNotAllowed, notAllowed)
			return
		}
		f.chatPage(w, r, user, strings.TrimPrefix(rest, "chat/"))
	default:
		http.NotFound(w, r)
	}
}

// tokenLifetimeBound is how long a logged-out token stays refused: longer
// than any token lives (--token-ttl is a day by default).
const tokenLifetimeBound = 31 * 24 * time.Hour

// chatPage serves /api/protected/chat/{friendId}/{offset}: the 20
// messages of the conversation from the offset-th newest back, oldest
// first, as VMR's backend answered from MySQL and from its Redis cache
// alike: its app puts each page before the messages it shows.
func (f *Face) chatPage(w http.ResponseWriter, r *http.Request, user uint64, params string) {
	a, b, ok := strings.Cut(params, "/")
	friend, err1 := strconv.ParseInt(a, 10, 64)
	offset, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || friend <= 0 || offset < 0 {
		writeJSON(w, http.StatusBadRequest, restReply{Message: "want /api/protected/chat/{friendId}/{offset}, both non-negative integers"})
		return
	}
	res, err := f.local.GetMessagesAt(r.Context(), user, uint64(friend), uint64(offset), chatPage)
	if codeOf(err) == connect.CodeNotFound {
		res, err = &walletv1.GetMessagesResponse{}, nil // no such conversation: no messages, as VMR answered
	}
	if err != nil {
		f.internalError(w, "chat messages", err)
		return
	}
	n := len(res.Messages) // newest first
	msgs := make([]chatMessage, n)
	for i, m := range res.Messages {
		msgs[n-1-i] = chatMessageOf(m)
	}
	writeJSON(w, http.StatusOK, restReply{Message: "Get chat messages successfully", Data: map[string]any{
		"messages": msgs, "newOffset": offset + int64(len(msgs)),
	}})
}
