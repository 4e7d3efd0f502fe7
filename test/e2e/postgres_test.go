package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// startPostgres starts a throwaway PostgreSQL cluster, made with initdb
// under a temporary directory and listening only on a Unix socket there,
// and returns its URL. It is stopped (immediately: nothing in it is kept)
// and removed when the test ends. Where PostgreSQL is not installed the
// test is skipped, except in CI, which installs it (.ci/run).
//
// initdb refuses to run as root, so as root the cluster belongs to the
// postgres user (the Debian package creates it) and its commands run as
// that user.
func startPostgres(t *testing.T) string {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("PostgreSQL is not installed: .ci/run must install Debian's postgresql package")
		}
		t.Skip("PostgreSQL is not installed (Debian: apt-get install postgresql); the test needs its initdb and pg_ctl")
	}
	slices.SortFunc(bins, func(a, b string) int { return pgVersion(a) - pgVersion(b) })
	bin := filepath.Dir(bins[len(bins)-1])

	dir, err := os.MkdirTemp("", "surge-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	runAs := func(name string, args ...string) *exec.Cmd {
		return exec.Command(filepath.Join(bin, name), args...)
	}
	if os.Geteuid() == 0 {
		runAs = asPostgresUser(t, dir, bin)
	}
	data, logFile := filepath.Join(dir, "data"), filepath.Join(dir, "log")
	if out, err := runAs("initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -p 5432", dir)
	if out, err := runAs("pg_ctl", "-D", data, "-w", "-l", logFile, "-o", opts, "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		if out, err := runAs("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
			t.Errorf("pg_ctl stop: %v\n%s", err, out)
		}
	})
	return "postgres://postgres@/postgres?host=" + dir + "&port=5432&sslmode=disable"
}

// asPostgresUser hands dir to the postgres user and returns how to run
// the cluster's commands as that user.
func asPostgresUser(t *testing.T, dir, bin string) func(string, ...string) *exec.Cmd {
	t.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root, the cluster needs the postgres user (Debian's postgresql package creates it): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return func(name string, args ...string) *exec.Cmd {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(bin, name)}, args...)...)
	}
}

// pgVersion is the major version in a path /usr/lib/postgresql/<v>/bin/...
func pgVersion(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}
