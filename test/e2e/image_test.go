package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// imageConfig is the part of `podman image inspect` the test checks.
type imageConfig struct {
	User         string
	Env          []string
	ExposedPorts map[string]struct{}
	Volumes      map[string]struct{}
	Entrypoint   []string
	Cmd          []string
	// Healthcheck is beside Config in podman's output.
	Healthcheck struct{ Test []string } `json:"-"`
}

// TestImage builds the image of the Dockerfile from scratch with podman
// (scripts/image.sh), checks its configuration (non-root user, port,
// volume, health check on /readyz), and runs its surge as the image's
// user in the image's file system: the default command refuses to serve
// plaintext off loopback without a key, and with TLS the server comes up
// and the image's own health check passes over TLS. It runs the image's
// file system with chroot (as root) rather than `podman run`, whose
// runtime needs a cgroup layout and resource limits that the development
// machines do not grant (crun: "cgroups in hybrid mode not supported").
// It runs under SURGE_IMAGE_TESTS=1 (make test-image): building the
// static binary takes minutes.
func TestImage(t *testing.T) {
	if os.Getenv("SURGE_IMAGE_TESTS") == "" {
		t.Skip("the image test runs with SURGE_IMAGE_TESTS=1 (make test-image)")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman not on PATH (Debian: apt-get install podman)")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("localhost/surge:e2e-%d", os.Getpid())
	build := exec.Command("bash", filepath.Join(root, "scripts", "image.sh"), tag)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("podman", "rmi", "-f", tag).Run() })

	cfg := inspectImage(t, tag)
	if cfg.User != "65532:65532" || !hasKey(cfg.ExposedPorts, "8080/tcp") || !hasKey(cfg.Volumes, "/data") ||
		!slices.Equal(cfg.Healthcheck.Test, []string{"CMD", "/surge", "healthcheck"}) {
		t.Fatalf("image config %+v: want user 65532:65532, port 8080, volume /data, health check /surge healthcheck", cfg)
	}

	fsRoot := containerRoot(t, tag)
	pki := newTestPKI(t, "image")
	cert := pki.issue(t, "server", filepath.Join(fsRoot, "server.pem"), filepath.Join(fsRoot, "server-key.pem"), "127.0.0.1")
	for _, f := range []string{cert.certFile, cert.keyFile} {
		if err := os.Chown(f, 65532, 65532); err != nil {
			t.Fatal(err)
		}
	}
	refused := asImageUser(fsRoot, cfg, nil, slices.Concat(cfg.Entrypoint, cfg.Cmd)...)
	if out, err := refused.CombinedOutput(); err == nil || !strings.Contains(string(out), "--api-key") {
		t.Errorf("the image's default command over 0.0.0.0 without a key: exit %v, output %s; want a refusal naming --api-key", err, out)
	}

	addr := freeLoopbackAddr(t)
	tlsEnv := []string{"SURGE_ADDR=" + addr, "SURGE_TLS_CERT=/server.pem", "SURGE_TLS_KEY=/server-key.pem"}
	startProcess(t, "surge in the image", asImageUser(fsRoot, cfg, tlsEnv, slices.Concat(cfg.Entrypoint, cfg.Cmd)...))
	poll(t, startTimeout, "the image's health check to pass over TLS", func() (bool, string) {
		out, err := asImageUser(fsRoot, cfg, tlsEnv, "/surge", "healthcheck").CombinedOutput()
		return err == nil, string(out)
	})
	if res, err := httpsClient(pki.clientTLS(t, nil), true).Get("https://" + addr + "/readyz"); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /readyz from outside with the test's CA: %v %v", res, err)
	}
	t.Logf("surge of the image serves TLS on %s as user 65532", addr)
}

// inspectImage reads tag's configuration.
func inspectImage(t *testing.T, tag string) imageConfig {
	t.Helper()
	out, err := exec.Command("podman", "image", "inspect", tag).Output()
	if err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	var imgs []struct {
		Config      imageConfig
		Healthcheck struct{ Test []string }
	}
	if err := json.Unmarshal(out, &imgs); err != nil || len(imgs) != 1 {
		t.Fatalf("podman image inspect: %v: %s", err, out)
	}
	imgs[0].Config.Healthcheck = imgs[0].Healthcheck
	return imgs[0].Config
}

// containerRoot creates a container of tag and mounts its file system
// (writable, /data included), removing it when the test ends.
func containerRoot(t *testing.T, tag string) string {
	t.Helper()
	id, err := exec.Command("podman", "create", tag).Output()
	if err != nil {
		t.Fatalf("podman create: %v", err)
	}
	ctr := strings.TrimSpace(string(id))
	t.Cleanup(func() { _ = exec.Command("podman", "rm", "-f", ctr).Run() })
	dir, err := exec.Command("podman", "mount", ctr).Output()
	if err != nil {
		t.Fatalf("podman mount: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("podman", "umount", ctr).Run() })
	return strings.TrimSpace(string(dir))
}

// asImageUser is a command run in fsRoot as the image's user with the
// image's environment, then env.
func asImageUser(fsRoot string, cfg imageConfig, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("chroot", append([]string{"--userspec=" + cfg.User, fsRoot}, args...)...)
	cmd.Env = slices.Concat(cfg.Env, env)
	return cmd
}

func hasKey(m map[string]struct{}, k string) bool {
	_, ok := m[k]
	return ok
}
