package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromiumEnv names the browser the dashboard tests drive; without it they
// look for Debian's chromium (or Chrome) on PATH, and skip if none is there.
// CI installs chromium, so there they run.
const chromiumEnv = "SURGE_CHROMIUM"

// artifactsEnv names a directory where browser tests keep their
// screenshots; without it they go to the test's temporary directory, whose
// path is logged.
const artifactsEnv = "SURGE_TEST_ARTIFACTS"

// browserTimeout caps one browser test; a healthy run takes a few seconds.
const browserTimeout = 60 * time.Second

func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(chromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skipf("no chromium on PATH and %s unset: the browser test needs Debian's chromium (apt-get install chromium)", chromiumEnv)
	return ""
}

// browser is one headless Chromium tab, with every URL it requested.
type browser struct {
	ctx context.Context
	mu  sync.Mutex
	// requested lists the URLs the page asked for, to prove it asks
	// nothing of the network beyond surge.
	requested []string
}

// newBrowser starts headless Chromium with extra options after the
// usual ones.
func newBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 1000),
	)
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, browserTimeout)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Request != nil {
			b.mu.Lock()
			b.requested = append(b.requested, e.Request.URL)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return b
}

// open loads url and waits until sel is visible.
func (b *browser) open(t *testing.T, url, sel string) {
	t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
}

// eval evaluates a JavaScript expression into T.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// onlyFrom checks that every URL the page requested starts with base.
func (b *browser) onlyFrom(t *testing.T, base string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requested) == 0 {
		t.Error("the browser reported no request at all")
	}
	for _, u := range b.requested {
		if !strings.HasPrefix(u, base+"/") {
			t.Errorf("the page requested %s, beyond %s", u, base)
		}
	}
}

// screenshot saves the page as name.png among the test's artifacts.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
