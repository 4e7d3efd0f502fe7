package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

// kafkaPassword is the SASL password of the test's Kafka user "surge".
const kafkaPassword = "pw-of-the-surge-user-7d1e"

// secureKafka is a Kafka whose clients reach it only over SASL_SSL, with
// a client certificate, and the files a surge node needs to.
type secureKafka struct {
	*kafkatest.Cluster
	pki          *testPKI
	client       issued
	passwordFile string
}

// startSecureKafka makes the brokers' and a client's certificates and the
// user "surge" (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512), and starts
// brokers brokers with a SASL_SSL listener (scripts/kafka.sh start -s).
func startSecureKafka(t *testing.T, brokers int) *secureKafka {
	t.Helper()
	if why := kafkatest.Unavailable(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	pki := newTestPKI(t, "kafka")
	broker := pki.issue(t, "broker", "", "", "127.0.0.1", "localhost")
	sec := t.TempDir()
	keystore := append(readFile(t, broker.keyFile), readFile(t, broker.certFile)...)
	write(t, filepath.Join(sec, "broker.pem"), keystore)
	write(t, filepath.Join(sec, "ca.pem"), readFile(t, pki.caFile))
	write(t, filepath.Join(sec, "users"), []byte("surge "+kafkaPassword+"\n"))
	k, err := kafkatest.StartSecure(brokers, sec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Stop() })
	pw := filepath.Join(t.TempDir(), "kafka-password")
	write(t, pw, []byte(kafkaPassword+"\n"))
	return &secureKafka{Cluster: k, pki: pki, client: pki.issue(t, "surge-node", "", "", "surge-node"), passwordFile: pw}
}

// securityArgs are the flags of a node that reaches k over SASL_SSL with
// mechanism, its client certificate, and ca as the brokers' authority.
func (k *secureKafka) securityArgs(mechanism, ca string) []string {
	return []string{"--kafka-tls-ca", ca, "--kafka-tls-cert", k.client.certFile, "--kafka-tls-key", k.client.keyFile,
		"--kafka-sasl-mechanism", mechanism, "--kafka-sasl-user", "surge"}
}

// nodeArgs are the flags of `surge serve` as a node of cluster on k (see
// securityArgs).
func (k *secureKafka) nodeArgs(t *testing.T, cluster, mechanism, ca string) []string {
	return append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--kafka", strings.Join(k.Brokers, ","),
		"--cluster", cluster, "--partitions", "6"}, k.securityArgs(mechanism, ca)...)
}

// TestClusterNodeOverSASLSSL: a node reaches a Kafka that takes only
// SASL_SSL with each SASL mechanism, its password from a file or the
// environment and never on its command line or in its output; a wrong
// password, and brokers whose authority the node was not given, each stop
// the node at start with an error that says which.
func TestClusterNodeOverSASLSSL(t *testing.T) {
	k := startSecureKafka(t, 1)
	for i, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		args := k.nodeArgs(t, "sasl"+strconv.Itoa(i), mech, k.pki.caFile)
		var env []string
		if i%2 == 0 {
			args = append(args, "--kafka-sasl-password-file", k.passwordFile)
		} else {
			env = []string{"SURGE_KAFKA_SASL_PASSWORD=" + kafkaPassword}
		}
		s := launch(t, args, env)
		s.awaitReady("")
		if _, r, err := s.c.CreateAccount(NewAccount{ID: "over-" + mech, Currency: "USD"}); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("%s: create an account through Kafka: %v %v", mech, r, err)
		}
		cmdline := readFile(t, filepath.Join("/proc", strconv.Itoa(s.cmd.Process.Pid), "cmdline"))
		s.stop()
		if strings.Contains(string(cmdline), kafkaPassword) || strings.Contains(s.out.String(), kafkaPassword) {
			t.Errorf("%s: the password shows on the command line or in the output", mech)
		}
	}

	wrong := launch(t, k.nodeArgs(t, "sasl", "SCRAM-SHA-512", k.pki.caFile), []string{"SURGE_KAFKA_SASL_PASSWORD=not-" + kafkaPassword})
	if out := awaitRefusal(t, wrong); !strings.Contains(out, "refused the sasl login") {
		t.Errorf("a wrong password: the refusal does not say so:\n%s", out)
	} else {
		t.Logf("a wrong password: %s", lastLine(out))
	}
	stranger := newTestPKI(t, "stranger")
	unknown := launch(t, append(k.nodeArgs(t, "sasl", "PLAIN", stranger.caFile), "--kafka-sasl-password-file", k.passwordFile), nil)
	if out := awaitRefusal(t, unknown); !strings.Contains(out, "not trusted") || !strings.Contains(out, "--kafka-tls-ca") {
		t.Errorf("brokers of an unknown authority: the refusal does not say so:\n%s", out)
	} else {
		t.Logf("brokers of an unknown authority: %s", lastLine(out))
	}
}

// TestClusterSurvivesANodesKillOverSASLSSL is TestClusterSurvivesANodesKill
// on a Kafka that takes only SASL_SSL (SCRAM-SHA-512, client
// certificates).
func TestClusterSurvivesANodesKillOverSASLSSL(t *testing.T) {
	if os.Getenv("SURGE_KAFKA_CLUSTER_TESTS") == "" {
		t.Skip("cluster tests run with SURGE_KAFKA_CLUSTER_TESTS=1 (make test-cluster)")
	}
	k := startSecureKafka(t, 1)
	startNodes(t, k.Cluster, 3, append(k.securityArgs("SCRAM-SHA-512", k.pki.caFile), "--kafka-sasl-password-file", k.passwordFile)...).survivesANodesKill(t)
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
