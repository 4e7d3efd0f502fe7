package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// healthcheckConfig holds the flags of `surge healthcheck`, named as
// serve's so that the SURGE_* variables that configure a server (in a
// container, say) point its health check at it too.
type healthcheckConfig struct {
	addr    string
	tls     tlsConfig
	timeout time.Duration
}

func newHealthcheckCommand() *cobra.Command {
	var c healthcheckConfig
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the local surge answers /readyz 200, else 1 (a container's HEALTHCHECK)",
		Long: `Ask the surge serving --addr for /readyz and exit 0 if it answers 200, 1
otherwise, printing why. A wildcard address (0.0.0.0, ::) is asked on loopback.
With --tls-cert the question goes over TLS, without verifying the server's
certificate (the process asks its own server on loopback); with --tls-client-ca
too, it shows --tls-cert and --tls-key as its client certificate.

It reads the same SURGE_* variables as "surge serve", so an image that sets the
server up through the environment needs no arguments here.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return healthcheck(cmd.Context(), c, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address surge serve listens on")
	addTLSFlags(f, &c.tls)
	f.DurationVar(&c.timeout, "timeout", 5*time.Second, "longest the answer may take")
	return cmd
}

func healthcheck(ctx context.Context, c healthcheckConfig, out io.Writer) error {
	target, client, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/readyz", nil)
	if err != nil {
		return err
	}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s/readyz answered %d: %s", target, res.StatusCode, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(out, "%s/readyz: %s", target, body)
	return nil
}

// client is the base URL of the local server and a client for it.
func (c healthcheckConfig) client() (string, *http.Client, error) {
	host, port, err := net.SplitHostPort(c.addr)
	if err != nil {
		return "", nil, fmt.Errorf("--addr %q: %w", c.addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	hostPort := net.JoinHostPort(host, port)
	if !c.tls.enabled() {
		return "http://" + hostPort, &http.Client{}, nil
	}
	// The check asks its own server: what it verifies is readiness, not
	// the certificate, which names the public host rather than loopback.
	tc := &tls.Config{InsecureSkipVerify: true}
	if c.tls.clientCA != "" {
		pair, err := tls.LoadX509KeyPair(c.tls.cert, c.tls.key)
		if err != nil {
			return "", nil, fmt.Errorf("healthcheck client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return "https://" + hostPort, &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}, nil
}
