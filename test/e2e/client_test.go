package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// NewAccount is the body of POST /v1/accounts.
type NewAccount struct {
	ID             string            `json:"id"`
	Currency       string            `json:"currency"`
	OverdraftLimit int64             `json:"overdraft_limit,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// Account is an account as the server returns it.
type Account struct {
	ID             string            `json:"id"`
	Currency       string            `json:"currency"`
	Balance        int64             `json:"balance"`
	Pending        int64             `json:"pending"`
	Available      int64             `json:"available"`
	OverdraftLimit int64             `json:"overdraft_limit"`
	Metadata       map[string]string `json:"metadata"`
	System         bool              `json:"system"`
	Entries        uint64            `json:"entries"`
	CreatedAt      string            `json:"created_at"`
}

// TransferReq is the body of POST /v1/transfers and of one batch item.
type TransferReq struct {
	ID        string `json:"id,omitempty"`
	From      string `json:"from"`
	To        string `json:"to"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency,omitempty"`
	Memo      string `json:"memo,omitempty"`
	Pending   bool   `json:"pending,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// Transfer is a transfer as the server returns it.
type Transfer struct {
	ID           string `json:"id"`
	From         string `json:"from"`
	To           string `json:"to"`
	Amount       int64  `json:"amount"`
	Currency     string `json:"currency"`
	Memo         string `json:"memo"`
	State        string `json:"state"`
	Pending      bool   `json:"pending"`
	PostedAmount int64  `json:"posted_amount"`
	TimeoutMS    int64  `json:"timeout_ms"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
	ExpiresAt    string `json:"expires_at"`
}

// BatchReq is the body of POST /v1/transfers/batch.
type BatchReq struct {
	Atomic    bool          `json:"atomic"`
	Transfers []TransferReq `json:"transfers"`
}

// BatchItem is the outcome of one batch item.
type BatchItem struct {
	ID     string `json:"id"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// BatchReply is the body of a batch answer (200, or 422 for an aborted
// atomic batch).
type BatchReply struct {
	Results []BatchItem `json:"results"`
}

// Entry is one line of an account's history.
type Entry struct {
	Seq          uint64 `json:"seq"`
	TransferID   string `json:"transfer_id"`
	Direction    string `json:"direction"`
	Amount       int64  `json:"amount"`
	BalanceAfter int64  `json:"balance_after"`
	Counterpart  string `json:"counterpart"`
	Memo         string `json:"memo"`
	CreatedAt    string `json:"created_at"`
}

// Page is one page of history.
type Page struct {
	Items      []Entry `json:"items"`
	NextCursor string  `json:"next_cursor"`
}

// Stats is the body of GET /v1/ledger/stats.
type Stats struct {
	Accounts   int64            `json:"accounts"`
	BalanceSum map[string]int64 `json:"balance_sum"`
}

// Problem is an RFC 9457 problem body.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// Response is one exchange with the server, kept whole for assertions and
// for failure messages.
type Response struct {
	Method  string
	Path    string
	ReqBody []byte
	Status  int
	Header  http.Header
	Body    []byte
	// Problem is the decoded error body when Status >= 400.
	Problem Problem
}

// String describes the exchange, bodies shortened, for failure messages.
func (r *Response) String() string {
	return fmt.Sprintf("%s %s %s -> %d %s", r.Method, r.Path, shorten(r.ReqBody), r.Status, shorten(r.Body))
}

// shorten returns b as a string of at most 300 bytes.
func shorten(b []byte) string {
	const maxLen = 300
	if len(b) > maxLen {
		return fmt.Sprintf("%s…(%d bytes)", b[:maxLen], len(b))
	}
	return string(b)
}

// Client is a small typed client for the ledger routes of docs/API.md.
type Client struct {
	base   string
	auth   string      // the Authorization header value, if any
	header http.Header // more headers to send, if any
	hc     *http.Client
}

// newClient returns a client for the server at base; key, when not empty,
// is sent as a bearer token.
func newClient(base, key string) *Client {
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	c := &Client{base: base, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	return c.withKey(key)
}

// withKey returns a client for the same server that sends key as a bearer
// token instead (none when empty).
func (c *Client) withKey(key string) *Client {
	if key == "" {
		return c.withAuth("")
	}
	return c.withAuth("Bearer " + key)
}

// withAuth returns a client for the same server that sends auth verbatim
// as its Authorization header (none when empty).
func (c *Client) withAuth(auth string) *Client {
	cp := *c
	cp.auth = auth
	return &cp
}

// withHeader returns a client for the same server that also sends the
// header name: value.
func (c *Client) withHeader(name, value string) *Client {
	cp := *c
	cp.header = c.header.Clone()
	if cp.header == nil {
		cp.header = http.Header{}
	}
	cp.header.Set(name, value)
	return &cp
}

// raw sends body as is with the given Content-Type (none when empty) and
// returns the whole response.
func (c *Client) raw(method, path, contentType string, body []byte) (*Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	for name, values := range c.header {
		req.Header[name] = values
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading body: %w", method, path, err)
	}
	r := &Response{Method: method, Path: path, ReqBody: body, Status: res.StatusCode, Header: res.Header, Body: b}
	if r.Status >= 400 {
		_ = json.Unmarshal(b, &r.Problem)
	}
	return r, nil
}

// do sends in as JSON (no body when in is nil) and decodes a 2xx answer
// into out (when not nil). A 2xx body that does not decode is an error.
func (c *Client) do(method, path string, in, out any) (*Response, error) {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = b
	}
	r, err := c.raw(method, path, "application/json", body)
	if err != nil {
		return nil, err
	}
	if r.Status/100 == 2 && out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return r, fmt.Errorf("%s: undecodable body: %w", r, err)
		}
	}
	return r, nil
}

// CreateAccount is POST /v1/accounts.
func (c *Client) CreateAccount(a NewAccount) (Account, *Response, error) {
	var out Account
	r, err := c.do(http.MethodPost, "/v1/accounts", a, &out)
	return out, r, err
}

// Account is GET /v1/accounts/{id}.
func (c *Client) Account(id string) (Account, *Response, error) {
	var out Account
	r, err := c.do(http.MethodGet, "/v1/accounts/"+url.PathEscape(id), nil, &out)
	return out, r, err
}

// Transfer is POST /v1/transfers.
func (c *Client) Transfer(req TransferReq) (Transfer, *Response, error) {
	var out Transfer
	r, err := c.do(http.MethodPost, "/v1/transfers", req, &out)
	return out, r, err
}

// GetTransfer is GET /v1/transfers/{id}.
func (c *Client) GetTransfer(id string) (Transfer, *Response, error) {
	var out Transfer
	r, err := c.do(http.MethodGet, "/v1/transfers/"+url.PathEscape(id), nil, &out)
	return out, r, err
}

// Post is POST /v1/transfers/{id}/post; amount 0 sends no body (post all
// that is held).
func (c *Client) Post(id string, amount int64) (Transfer, *Response, error) {
	var in any
	if amount != 0 {
		in = map[string]int64{"amount": amount}
	}
	var out Transfer
	r, err := c.do(http.MethodPost, "/v1/transfers/"+url.PathEscape(id)+"/post", in, &out)
	return out, r, err
}

// Void is POST /v1/transfers/{id}/void.
func (c *Client) Void(id string) (Transfer, *Response, error) {
	var out Transfer
	r, err := c.do(http.MethodPost, "/v1/transfers/"+url.PathEscape(id)+"/void", nil, &out)
	return out, r, err
}

// Batch is POST /v1/transfers/batch. The results are decoded whatever the
// status, since an aborted atomic batch answers 422 with them.
func (c *Client) Batch(b BatchReq) (BatchReply, *Response, error) {
	var out BatchReply
	r, err := c.do(http.MethodPost, "/v1/transfers/batch", b, nil)
	if err == nil {
		if derr := json.Unmarshal(r.Body, &out); derr != nil && (r.Status == 200 || r.Status == 422) {
			err = fmt.Errorf("%s: undecodable batch reply: %w", r, derr)
		}
	}
	return out, r, err
}

// HistoryPage is GET /v1/accounts/{id}/transfers with query q.
func (c *Client) HistoryPage(id string, q url.Values) (Page, *Response, error) {
	var out Page
	path := "/v1/accounts/" + url.PathEscape(id) + "/transfers"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	r, err := c.do(http.MethodGet, path, nil, &out)
	return out, r, err
}

// Stats is GET /v1/ledger/stats.
func (c *Client) Stats() (Stats, *Response, error) {
	var out Stats
	r, err := c.do(http.MethodGet, "/v1/ledger/stats", nil, &out)
	return out, r, err
}

// maxPages bounds every paging loop.
const maxPages = 100000

// History returns the whole history of an account, newest first, following
// next_cursor with pages of limit entries.
func (c *Client) History(id string, limit int) ([]Entry, error) {
	var all []Entry
	cursor := ""
	for range maxPages {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		p, r, err := c.HistoryPage(id, q)
		if err != nil {
			return nil, err
		}
		if r.Status != http.StatusOK {
			return nil, fmt.Errorf("history page: %s", r)
		}
		all = append(all, p.Items...)
		if p.NextCursor == "" {
			return all, nil
		}
		if p.NextCursor == cursor || len(p.Items) == 0 {
			return nil, fmt.Errorf("history of %s: cursor %q does not advance: %s", id, cursor, r)
		}
		cursor = p.NextCursor
	}
	return nil, fmt.Errorf("history of %s: more than %d pages", id, maxPages)
}

// HistoryByOffset returns the whole history of an account, newest first,
// paging with offset= and pages of limit entries.
func (c *Client) HistoryByOffset(id string, limit int) ([]Entry, error) {
	var all []Entry
	for range maxPages {
		q := url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(len(all))}}
		p, r, err := c.HistoryPage(id, q)
		if err != nil {
			return nil, err
		}
		if r.Status != http.StatusOK {
			return nil, fmt.Errorf("history page: %s", r)
		}
		if len(p.Items) > limit {
			return nil, fmt.Errorf("history of %s: %d items on a page of limit %d", id, len(p.Items), limit)
		}
		all = append(all, p.Items...)
		if len(p.Items) < limit {
			return all, nil
		}
	}
	return nil, fmt.Errorf("history of %s: more than %d pages", id, maxPages)
}

// isProblemJSON reports whether a response is typed as a problem document.
func isProblemJSON(r *Response) bool {
	return strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json")
}
