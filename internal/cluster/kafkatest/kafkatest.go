// Package kafkatest runs a real Apache Kafka cluster for tests: the KRaft
// broker that scripts/kafka.sh fetches from Maven Central and starts on
// loopback with a throwaway log dir. Tests of a package share one
// single-node cluster (Shared, stopped by Main); tests that kill brokers
// start their own (Start).
//
// Where Java or Maven cannot be had the tests skip with the reason, except
// in CI (CI=true), where .ci/run installs both and a missing broker fails.
package kafkatest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is a running Kafka cluster started by scripts/kafka.sh.
type Cluster struct {
	// Brokers are the bootstrap addresses, host:port, one per node.
	Brokers []string
	script  string
	dir     string
}

// Start starts a cluster of n combined broker+controller nodes and waits
// until each serves. With n > 1 its internal topics are replicated n times.
func Start(n int) (*Cluster, error) { return start(n) }

// StartSecure starts a cluster as Start does whose clients reach it only
// through a SASL_SSL listener made from secDir's files (scripts/kafka.sh
// start -s says which): Brokers are that listener's addresses.
func StartSecure(n int, secDir string) (*Cluster, error) { return start(n, "-s", secDir) }

func start(n int, extra ...string) (*Cluster, error) {
	script, err := findScript()
	if err != nil {
		return nil, err
	}
	if why := Unavailable(); why != "" {
		return nil, errors.New(why)
	}
	dir, err := os.MkdirTemp("", "surge-kafka-")
	if err != nil {
		return nil, err
	}
	out, err := run(script, append([]string{"start", "-n", strconv.Itoa(n), "-d", dir}, extra...)...)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Cluster{Brokers: strings.Split(out, ","), script: script, dir: dir}, nil
}

// Stop stops every node and deletes the cluster's data.
func (c *Cluster) Stop() error {
	_, err := run(c.script, "stop", c.dir)
	return err
}

// Kill kills node i (1-based) with SIGKILL, as a machine's death would.
func (c *Cluster) Kill(i int) error {
	_, err := run(c.script, "kill", c.dir, strconv.Itoa(i))
	return err
}

// CPUTime is the CPU time the cluster's nodes (their JVMs) have used so
// far, user and system, read from /proc: benchmarks take the brokers' share
// of what they measure from it.
func (c *Cluster) CPUTime() (time.Duration, error) {
	pids, err := filepath.Glob(filepath.Join(c.dir, "node-*", "pid"))
	if err != nil || len(pids) == 0 {
		return 0, fmt.Errorf("kafkatest: no node pid in %s: %v", c.dir, err)
	}
	var total time.Duration
	for _, f := range pids {
		pid, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		stat, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "stat"))
		if err != nil {
			return 0, err
		}
		// Fields after the command's closing parenthesis: utime and stime
		// are the 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
		rest := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(rest) < 13 {
			return 0, fmt.Errorf("kafkatest: short /proc stat of node %s", pid)
		}
		for _, f := range rest[11:13] {
			ticks, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return 0, err
			}
			total += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return total, nil
}

// Unavailable says why a Kafka broker cannot run on this machine, or ""
// when it can: Java runs the broker and Maven fetches its jars.
func Unavailable() string {
	var missing []string
	for _, tool := range []string{"java", "mvn", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("a real Kafka broker needs %s on PATH "+
		"(Debian: apt-get install openjdk-17-jre-headless maven)", strings.Join(missing, " and "))
}

var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// Shared returns the package's single-node cluster, started on first use.
// It skips t in -short runs and where Kafka cannot run (failing it in CI).
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("kafkatest: needs a real Kafka broker; skipped in -short runs")
	}
	if why := Unavailable(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kafkatest: %s; .ci/run installs them", why)
		}
		t.Skip("kafkatest: " + why)
	}
	shared.once.Do(func() { shared.cluster, shared.err = Start(1) })
	if shared.err != nil {
		t.Fatalf("kafkatest: starting Kafka: %v", shared.err)
	}
	return shared.cluster
}

// Main runs the package's tests, stops the shared cluster if a test started
// it, and exits: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared.cluster != nil {
		if err := shared.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kafkatest: stopping Kafka:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// run runs scripts/kafka.sh with args and returns its trimmed stdout.
func run(script string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kafka.sh %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// findScript finds scripts/kafka.sh in the nearest enclosing directory that
// has one: tests run in their package's directory inside the repository.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "kafka.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kafkatest: scripts/kafka.sh not found above the working directory")
		}
		dir = parent
	}
}

// RefusedProduce answers every partition req produces to with the error
// code: a kfake control's response for a write the broker refuses.
func RefusedProduce(req *kmsg.ProduceRequest, code int16) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
