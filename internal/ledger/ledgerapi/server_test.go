package ledgerapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodyLimitsOverHTTP checks the limits over a real connection, with and
// without a declared length: exactly the limit passes, one byte more is 413.
func TestBodyLimitsOverHTTP(t *testing.T) {
	ta := newTestAPI(t, "")
	srv := httptest.NewServer(ta.Handler())
	defer srv.Close()
	transfer := `{"from":"a","to":"b","amount":1}`
	batch := `{"transfers":[{"from":"a","to":"b","amount":1}]}`
	for _, c := range []struct {
		path, body string
		limit      int
	}{{"/v1/transfers", transfer, maxBody}, {"/v1/transfers/batch", batch, MaxBatchBody}} {
		for _, chunked := range []bool{false, true} {
			for extra, want := range []int{200, 413} {
				if c.path == "/v1/transfers" && extra == 0 {
					want = 201
				}
				body := c.body + strings.Repeat(" ", c.limit-len(c.body)+extra)
				var rd io.Reader = strings.NewReader(body)
				if chunked {
					rd = io.MultiReader(rd) // hides the length: sent chunked
				}
				req, _ := http.NewRequest("POST", srv.URL+c.path, rd)
				req.Header.Set("Content-Type", "application/json")
				res, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != want {
					t.Errorf("%s, %d bytes, chunked %v: %d %s, want %d", c.path, len(body), chunked, res.StatusCode, got, want)
				}
			}
		}
	}
}
