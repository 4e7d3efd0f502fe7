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

	"github.com/twmb/franz-go/pkg/kgo"
)

// zombieEnv carries the helper process's cluster: brokers|cluster|partitions.
const zombieEnv = "KAFKALOG_ZOMBIE"

// TestZombieHelper is the paused owner of TestPausedOwnerIsFenced, run in
// a process of its own so that SIGSTOP freezes all of it, heartbeats
// included. It takes its partitions, reads its batch, says "polled", waits
// for a line on stdin, and reports what became of its partitions' writes
// and where each landed. Its member ignores the group's revokes and
// losses, so that its round writes whatever the group did meanwhile: the
// log's order alone fences the write.
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
	ignore := func(context.Context, *kgo.Client, map[string][]int32) {}
	z := joinChainWith(t, c, "zombie", nil, nil, kgo.OnPartitionsRevoked(ignore), kgo.OnPartitionsLost(ignore))
	res, err := z.m.RoundWait(ctx, ctx, 100, nil, func(ctx context.Context, batch []Command) ([]Output, error) {
		fmt.Println("zombie: polled", len(batch))
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return nil, err
		}
		return z.apply(ctx, batch)
	})
	for _, pr := range res.Partitions {
		fmt.Printf("zombie: partition %d result=%d written=%d-%d\n", pr.Partition, pr.Result, pr.Written.Base, pr.Written.End)
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
// out; when it thaws, its member knowing nothing of the move, its write
// lands after the new owner's claim and is fenced, and the commands are
// applied once, by the new owner: the log holds each one's change once
// that counts, and the zombie's changes, none of which counts.
func TestPausedOwnerIsFenced(t *testing.T) {
	const n = 10
	ctx, c := newCluster(t, 1)
	appendCommands(t, ctx, c, 0, n)
	z := startZombie(t, c)
	var polled int
	if _, err := fmt.Sscanf(z.line(t), "polled %d", &polled); err != nil || polled == 0 {
		t.Fatalf("the zombie did not say how many commands it polled: %v", err)
	}
	z.signal(t, syscall.SIGSTOP)

	b := joinChain(t, c, "b")
	b.await(t, ctx, func() bool { return b.taken[0] == 1 }, "took the frozen node's partition")
	runChains(t, ctx, n, b)

	z.signal(t, syscall.SIGCONT)
	if _, err := io.WriteString(z.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	var result Result
	var base, end int64
	if _, err := fmt.Sscanf(z.line(t), "partition 0 result=%d written=%d-%d", &result, &base, &end); err != nil || result != Fenced || end <= base {
		t.Fatalf("the thawed zombie's round: result %d, written [%d, %d) (%v); want partition 0 written and fenced", result, base, end, err)
	}
	t.Logf("the thawed zombie's round: %s", z.line(t))
	restoredOnce(t, ctx, c, n)
	entries, counts, _ := readChangelog(t, ctx, c, 0)
	written := 0
	for i, e := range entries {
		if e.Kind != KindChange || string(e.Value) != "zombie" {
			continue
		}
		if e.Offset >= base && e.Offset < end {
			written++
		}
		if counts[i] {
			t.Errorf("the zombie's change of %s counts", e.Key)
		}
	}
	if written != polled {
		t.Errorf("the log holds %d of the zombie's changes where its write landed, want %d", written, polled)
	}
}
