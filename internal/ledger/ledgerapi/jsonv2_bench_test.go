package ledgerapi

import (
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/surge-dev/surge/internal/ledger"
)

// The A/B pair of the hand-written scanner (scan.go) and a strict library
// decoder, github.com/go-json-experiment/json, which rejects duplicate
// names and invalid UTF-8 by default, matches names exactly, and here
// rejects unknown members too: the scanner's strictness. The library side
// only fills structs; the scanner side also validates and builds the
// ledger's requests, so the pair favours the library.

// v2Transfer and v2Batch are the request bodies as structs for the library.
type v2Transfer struct {
	ID        string `json:"id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Memo      string `json:"memo"`
	Pending   bool   `json:"pending"`
	TimeoutMS int64  `json:"timeout_ms"`
}

type v2Batch struct {
	Transfers []v2Transfer `json:"transfers"`
	Atomic    bool         `json:"atomic"`
}

var strictV2 = jsonv2.RejectUnknownMembers(true)

func BenchmarkDecodeTransferScanner(b *testing.B) {
	b.SetBytes(int64(len(transferBody)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeTransfer(transferBody); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTransferJSONv2(b *testing.B) {
	b.SetBytes(int64(len(transferBody)))
	b.ReportAllocs()
	for b.Loop() {
		var t v2Transfer
		if err := jsonv2.Unmarshal(transferBody, &t, strictV2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBatchJSONv2(b *testing.B) {
	body := batchBody(ledger.MaxBatch)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var batch v2Batch
		if err := jsonv2.Unmarshal(body, &batch, strictV2); err != nil {
			b.Fatal(err)
		}
	}
}

// The library is as strict as the scanner on what the pair decodes.
func TestJSONv2IsStrict(t *testing.T) {
	for _, body := range []string{
		`{"id":"a","id":"b"}`,  // duplicate name
		`{"ID":"a"}`,           // names match exactly: an unknown member
		`{"id":"a","extra":1}`, // unknown member
		"{\"id\":\"\xff\"}",    // invalid UTF-8
		`{"amount":1.5}`,       // not an integer
	} {
		var v v2Transfer
		if err := jsonv2.Unmarshal([]byte(body), &v, strictV2); err == nil {
			t.Errorf("%s: accepted", body)
		}
		if _, err := decodeTransfer([]byte(body)); err == nil {
			t.Errorf("%s: the scanner accepted it", body)
		}
	}
}
