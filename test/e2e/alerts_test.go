package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// alertsDir holds the Prometheus rules of docs/ and their unit tests.
const alertsDir = "../../docs/alerts"

// promTool finds a Prometheus command (promtool, prometheus), skipping the
// test outside CI if it is missing; .ci/run installs Debian's prometheus.
func promTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not on PATH; .ci/run installs Debian's prometheus", name)
		}
		t.Skipf("%s not on PATH (Debian: apt-get install prometheus)", name)
	}
	return p
}

// TestAlertRules runs the rules' unit tests (promtool test rules): each
// rule of docs/alerts/surge.rules.yml fires on the series that should
// raise it and stays silent on the others.
func TestAlertRules(t *testing.T) {
	promtool := promTool(t, "promtool")
	cmd := exec.Command(promtool, "test", "rules", "surge.rules.test.yml")
	cmd.Dir = alertsDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// TestPrometheusScrapesSurge: Debian's prometheus scrapes a running surge
// with the rules loaded; its target is up, a query on a surge metric
// returns the server's value, and every rule loads healthy.
func TestPrometheusScrapesSurge(t *testing.T) {
	skipIfShort(t)
	bin := promTool(t, "prometheus")
	srv := start(t, t.TempDir(), "--max-conns", "4321")
	rules, err := filepath.Abs(filepath.Join(alertsDir, "surge.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: surge
    static_configs: [{targets: [%q]}]
`, rules, strings.TrimPrefix(srv.url, "http://"))
	write(t, filepath.Join(dir, "prometheus.yml"), []byte(config))
	api := "http://" + freeLoopbackAddr(t)
	prom := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+strings.TrimPrefix(api, "http://"))
	startProcess(t, "prometheus", prom)

	poll(t, startTimeout, "prometheus to find its surge target up", func() (bool, string) {
		var targets struct {
			ActiveTargets []struct{ Health, LastError string } `json:"activeTargets"`
		}
		if err := promGet(api, "/api/v1/targets", nil, &targets); err != nil {
			return false, err.Error()
		}
		return len(targets.ActiveTargets) == 1 && targets.ActiveTargets[0].Health == "up", fmt.Sprint(targets)
	})
	poll(t, startTimeout, "a query on surge_front_limit to return the server's value", func() (bool, string) {
		var res struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		}
		err := promGet(api, "/api/v1/query", url.Values{"query": {`surge_front_limit{job="surge",limit="max_conns"} * on (instance) group_left surge_ready`}}, &res)
		if err != nil {
			return false, err.Error()
		}
		return len(res.Result) == 1 && res.Result[0].Value[1] == "4321", fmt.Sprint(res)
	})
	var rulesRes struct {
		Groups []struct {
			Name  string
			Rules []struct{ Name, Health, LastError string }
		}
	}
	if err := promGet(api, "/api/v1/rules", nil, &rulesRes); err != nil {
		t.Fatal(err)
	}
	if len(rulesRes.Groups) != 1 || len(rulesRes.Groups[0].Rules) != 7 {
		t.Fatalf("rules loaded: %+v, want the 7 of group surge", rulesRes.Groups)
	}
	for _, r := range rulesRes.Groups[0].Rules {
		if r.Health != "ok" && r.Health != "unknown" || r.LastError != "" {
			t.Errorf("rule %s: health %s, error %q", r.Name, r.Health, r.LastError)
		}
	}
}

// startProcess starts cmd, kills it when the test ends, and logs its
// output if the test failed.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) {
	t.Helper()
	var log procOutput
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, log.tail(outputTailBytes))
		}
	})
}

// promGet calls Prometheus' HTTP API and decodes its data into out.
func promGet(base, path string, q url.Values, out any) error {
	res, err := http.Get(base + path + "?" + q.Encode())
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var body struct {
		Status string
		Data   json.RawMessage
		Error  string
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return err
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s %s", path, body.Status, body.Error)
	}
	return json.Unmarshal(body.Data, out)
}

// freeLoopbackAddr is a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
