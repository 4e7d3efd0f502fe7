package kafkalog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// zombieEnv carries the helper process's cluster: brokers|cluster|partitions.
const zombieEnv = "KAFKALOG_ZOMBIE"

// TestZombieHelper is the paused owner of TestPausedOwnerIsFenced, run in
// a process of its own so that SIGSTOP freezes all of it, heartbeats
// included. It takes its partitions, reads its batch, says "polled", waits
// for a line on stdin, and reports what became of its partitions' writes.
func TestZombieHelper(t *testing.T) {
	spec := os.Getenv(zombieEnv)
	if spec == "" {
		t.Skip("helper process of TestPausedOwnerIsFenced")
	}
	var c Config
	var brokers string
	if _, err := fmt.Sscanf(strings.ReplaceAll(spec, "|", " "), "%s %s %d", &brokers, &c.Cluster, &c.Partitions); err != nil {
		t.Fatal(err)
	}
	c.Brokers = strings.Split(brokers, ",")
	c.SessionTimeout = sessionTimeout
	ctx := context.Background()
	z := joinChain(t, c, "zombie")
	res, err := z.m.RoundWait(ctx, ctx, 100, nil, func(ctx context.Context, batch []Command) ([]Output, error) {
		fmt.Println("zombie: polled", len(batch))
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return nil, err
		}
		return z.apply(ctx, batch)
	})
	for _, pr := range res.Partitions {
		fmt.Printf("zombie: partition %d result=%d\n", pr.Partition, pr.Result)
	}
	fmt.Printf("zombie: done err=%v\n", err)
}

// zombie is the helper process and its pipes.
type zombie struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startZombie(t *testing.T, c Config) *zombie {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestZombieHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d", zombieEnv, strings.Join(c.Brokers, ","), c.Cluster, c.Partitions))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &zombie{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
}

// line returns the helper's next line that starts with "zombie: ".
func (z *zombie) line(t *testing.T) string {
	t.Helper()
	for z.out.Scan() {
		if l, ok := strings.CutPrefix(z.out.Text(), "zombie: "); ok {
			return l
		}
	}
	t.Fatalf("the zombie process ended early: %v", z.out.Err())
	return ""
}

func (z *zombie) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := z.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// A node frozen mid-round (SIGSTOP: no heartbeats, as in a long GC pause or
// a stalled VM) loses its partition to another node once its session times
// out; when it thaws and writes, its write is fenced (the new owner's claim
// took the partition, or its member gave the partition up first), and the
// commands are applied once, by the new owner: the log holds each one's
// change once, and none of the zombie's.
func TestPausedOwnerIsFenced(t *testing.T) {
	const n = 10
	ctx, c := newCluster(t, 1)
	appendCommands(t, ctx, c, 0, n)
	z := startZombie(t, c)
	if l := z.line(t); !strings.HasPrefix(l, "polled") {
		t.Fatalf("zombie said %q, want polled", l)
	}
	z.signal(t, syscall.SIGSTOP)

	b := joinChain(t, c, "b")
	b.await(t, ctx, func() bool { return b.taken[0] == 1 }, "took the frozen node's partition")
	runChains(t, ctx, n, b)

	z.signal(t, syscall.SIGCONT)
	if _, err := io.WriteString(z.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	if result := z.line(t); result != fmt.Sprintf("partition 0 result=%d", Fenced) {
		t.Fatalf("the thawed zombie's round: %s; want partition 0 fenced", result)
	}
	t.Logf("the thawed zombie's round: %s", z.line(t))
	restoredOnce(t, ctx, c, n)
	entries, counts, _ := readChangelog(t, ctx, c, 0)
	for i, e := range entries {
		if e.Kind == KindChange && string(e.Value) == "zombie" && counts[i] {
			t.Errorf("the zombie's change of %s counts", e.Key)
		}
	}
}
