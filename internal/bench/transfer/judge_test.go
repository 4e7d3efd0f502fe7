package transfer

import (
	"fmt"
	"testing"
)

func TestJudgeBatch(t *testing.T) {
	ok := []byte(`{"results":[{"id":"a","status":201},{"id":"b","status":200}]}`)
	if failed, reasons, valid := JudgeBatch(ok, 2); !valid || failed != 0 || reasons != nil {
		t.Errorf("all accepted: failed %d reasons %v valid %v", failed, reasons, valid)
	}
	mixed := []byte(`{"results":[{"id":"a","status":201},{"id":"b","status":422,"code":"insufficient_funds","detail":"d1"},` +
		`{"id":"c","status":422,"code":"insufficient_funds","detail":"d2"},{"id":"d","status":404,"code":"account_not_found"}]}`)
	failed, reasons, valid := JudgeBatch(mixed, 4)
	if !valid || failed != 3 || fmt.Sprint(reasons) != "[{422 insufficient_funds 2 d1} {404 account_not_found 1 }]" {
		t.Errorf("mixed: failed %d reasons %v valid %v", failed, reasons, valid)
	}
	if _, _, valid := JudgeBatch(ok, 3); valid {
		t.Error("two results accepted for a batch of three")
	}
	if _, _, valid := JudgeBatch([]byte("not json"), 1); valid {
		t.Error("garbage accepted as a batch reply")
	}
}
