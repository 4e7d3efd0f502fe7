package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/surge-dev/surge/internal/bench/spike"
)

// newBenchH2CTargetCommand is the ceiling target of `surge bench spike
// --ceiling`, started by it as a process of its own, as the server under
// test is: an empty h2c handler that prints its URL and serves until its
// standard input closes.
func newBenchH2CTargetCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "h2c-target",
		Short:  "Serve an empty HTTP/2 (h2c) handler: the ceiling of bench spike --http2 --ceiling",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithCancel(cmd.Context())
			go func() {
				_, _ = io.Copy(io.Discard, cmd.InOrStdin())
				cancel()
			}()
			return spike.ServeCeiling(ctx, cmd.OutOrStdout())
		},
	}
}

// startCeilingProcess runs `surge bench h2c-target` and returns its URL;
// stop closes its standard input, which ends it, waits for it, and
// returns the CPU time it used.
func startCeilingProcess(ctx context.Context) (url string, stop func() time.Duration, err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "bench", "h2c-target")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() time.Duration {
		_ = stdin.Close()
		_ = cmd.Wait()
		if cmd.ProcessState == nil {
			return -1
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		stop()
		return "", nil, errors.Join(fmt.Errorf("bench: the ceiling target did not start: %q", line), err)
	}
	return strings.TrimSpace(line), stop, nil
}
