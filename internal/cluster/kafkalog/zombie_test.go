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

// zombieEnv carries the helper process's cluster and mode:
// brokers|cluster|partitions|local.
const zombieEnv = "KAFKALOG_ZOMBIE"

// TestZombieHelper is the paused owner of TestPausedOwnerIsFenced and
// TestPausedOwnerOfLocalCommandsIsFenced, run in a process of its own so
// that SIGSTOP freezes all of it, heartbeats included. It reads its batch,
// says "polled", waits for a line on stdin, and reports how its round
// ended. With local set, its round first commits the commands it polls,
// then takes one local command only, "local-0" to partition 0.
func TestZombieHelper(t *testing.T) {
	spec := os.Getenv(zombieEnv)
	if spec == "" {
		t.Skip("helper process of TestPausedOwnerIsFenced")
	}
	var c Config
	var brokers string
	var local bool
	if _, err := fmt.Sscanf(strings.ReplaceAll(spec, "|", " "), "%s %s %d %t", &brokers, &c.Cluster, &c.Partitions, &local); err != nil {
		t.Fatal(err)
	}
	c.Brokers = strings.Split(brokers, ",")
	c.SessionTimeout = sessionTimeout
	ctx := context.Background()
	m, err := Join(ctx, c, "zombie", Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var src Local
	if local {
		if res, err := m.Round(ctx, 100, echo(c, "zombie", "zombie")); err != nil || !res.Committed {
			t.Fatalf("polled round: %+v, %v", res, err)
		}
		src = newTestLocal(localCommand(0, "local-0"))
	}
	res, err := m.RoundWait(ctx, ctx, 100, src, func(ctx context.Context, batch []Command) ([]Output, error) {
		fmt.Println("zombie: polled", len(batch))
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return nil, err
		}
		return echo(c, "zombie", "zombie")(ctx, batch)
	})
	fmt.Printf("zombie: committed=%v err=%v\n", res.Committed, err)
}

// zombie is the helper process and its pipes.
type zombie struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startZombie(t *testing.T, c Config, local bool) *zombie {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestZombieHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%t", zombieEnv, strings.Join(c.Brokers, ","), c.Cluster, c.Partitions, local))
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
// out; when it thaws and tries to commit, the group coordinator refuses its
// offsets, its transaction aborts, and the commands are done once, by the
// new owner.
func TestPausedOwnerIsFenced(t *testing.T) {
	const n = 10
	ctx, c := newCluster(t, 1)
	appendCommands(t, ctx, c, 0, n)
	z := startZombie(t, c, false)
	if l := z.line(t); !strings.HasPrefix(l, "polled") {
		t.Fatalf("zombie said %q, want polled", l)
	}
	z.signal(t, syscall.SIGSTOP)

	owned := make(chan struct{}, 1)
	b := join(t, ctx, c, "b", Handlers{Assigned: func(context.Context, []int32) { owned <- struct{}{} }})
	select {
	case <-owned:
	case <-ctx.Done():
		t.Fatal("the partition never moved from the frozen node")
	}
	runUntilDone(t, ctx, n, map[string]*Member{"b": b}, func(string) Apply { return echo(c, "b", "b") })

	z.signal(t, syscall.SIGCONT)
	if _, err := io.WriteString(z.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	result := z.line(t)
	if !strings.HasPrefix(result, "committed=false") {
		t.Fatalf("the thawed zombie's round: %s; want it refused", result)
	}
	t.Logf("the thawed zombie's round: %s", result)
	replies := readAll(t, ctx, c, c.RepliesTopic(), true)
	exactlyOnce(t, "committed replies", replies, n)
	for _, r := range replies {
		if string(r.Value) != "b" {
			t.Errorf("committed reply %s from %s, want only the new owner's", r.Key, r.Value)
		}
	}
}

// A node frozen in a round that took only a local command (no offset
// polled) is fenced the same way: the round commits its partition's
// offset again, which the group coordinator refuses from the expelled
// member, so the command's changelog record never becomes visible.
func TestPausedOwnerOfLocalCommandsIsFenced(t *testing.T) {
	ctx, c := newCluster(t, 1)
	appendCommands(t, ctx, c, 0, 1)
	z := startZombie(t, c, true)
	if l := z.line(t); l != "polled 1" {
		t.Fatalf("zombie said %q, want polled 1", l)
	}
	z.signal(t, syscall.SIGSTOP)

	owned := make(chan struct{}, 1)
	join(t, ctx, c, "b", Handlers{Assigned: func(context.Context, []int32) { owned <- struct{}{} }})
	select {
	case <-owned:
	case <-ctx.Done():
		t.Fatal("the partition never moved from the frozen node")
	}

	z.signal(t, syscall.SIGCONT)
	if _, err := io.WriteString(z.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	if result := z.line(t); !strings.HasPrefix(result, "committed=false") {
		t.Fatalf("the thawed zombie's round: %s; want it refused", result)
	}
	if keys := countKeys(readAll(t, ctx, c, c.ChangelogTopic(), true)); keys["local-0"] != 0 || keys["cmd-0"] != 1 {
		t.Fatalf("committed changelog records %v; want cmd-0 once and local-0 never", keys)
	}
}
