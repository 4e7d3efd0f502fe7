package kvapi

import (
	"errors"
	"net/url"
	"strings"

	"github.com/surge-dev/surge/internal/kv"
)

// errBadEscape is a query parameter with a malformed %-escape.
var errBadEscape = errors.New("malformed %-escape")

// queryParam returns the value of the first parameter called name in a raw
// (still escaped) query string, unescaped as a form value, and whether it
// was there at all. Unlike url.ParseQuery it builds no map and, for the
// usual unescaped key, allocates nothing; other parameters (the course's
// replication clients add from= and ack=) are ignored unread.
func queryParam(raw, name string) (value string, present bool, err error) {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if k, err = unescape(k); err != nil {
			return "", false, err
		}
		if k == name {
			v, err = unescape(v)
			return v, err == nil, err
		}
	}
	return "", false, nil
}

// unescape decodes a form-encoded query component, allocating only if it
// holds an escape.
func unescape(s string) (string, error) {
	if !strings.ContainsAny(s, "%+") {
		return s, nil
	}
	u, err := url.QueryUnescape(s)
	if err != nil {
		return "", errBadEscape
	}
	return u, nil
}

// keyParam reads the query parameter name as a key. A missing parameter
// reads as empty, which kv.CheckKey refuses like the course's service.
func keyParam(raw, name string) (string, error) {
	v, _, err := queryParam(raw, name)
	if err != nil {
		return "", err
	}
	return v, kv.CheckKey(v)
}

// rangeParams reads GET /v0/entities' start (required) and end (optional:
// absent means to the last key).
func rangeParams(raw string) (start, end string, err error) {
	if start, err = keyParam(raw, "start"); err != nil {
		return "", "", paramError("start", err)
	}
	end, present, err := queryParam(raw, "end")
	if err == nil && present {
		err = kv.CheckKey(end)
	}
	if err != nil {
		return "", "", paramError("end", err)
	}
	return start, end, nil
}

// paramError names the parameter an error is about.
func paramError(name string, err error) error { return &badParam{name: name, err: err} }

type badParam struct {
	name string
	err  error
}

func (e *badParam) Error() string { return e.name + ": " + e.err.Error() }
func (e *badParam) Unwrap() error { return e.err }
