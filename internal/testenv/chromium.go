package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Chromium returns Debian's chromium, skipping the test when it is not
// installed (`apt-get install chromium`; .ci/run installs it).
func Chromium(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	tb.Skip("testenv: chromium is not installed (apt-get install chromium)")
	return ""
}

// HeadlessChromium loads url in chromium bin, headless and offline (no
// sandbox, GPU, QUIC, first-run, background networking, component updates
// or sync; a fresh profile), in a 1400x900 window, letting the page run for
// 6 s of virtual time (its timers and fetches; chromium advances virtual
// time only while no fetch is pending), with args added (--dump-dom,
// --screenshot=PATH); it returns stdout and fails the test if chromium
// fails or runs past 2 minutes.
func HeadlessChromium(tb testing.TB, bin, url string, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + tb.TempDir(), "--window-size=1400,900", "--virtual-time-budget=6000"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(full, url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("testenv: chromium %s: %v\n%s", url, err, stderr.String())
	}
	return string(out)
}

// ArtifactDir is where tests keep artifacts (screenshots):
// $SWARM_ARTIFACTS, else $TMPDIR/swarm-artifacts; it is created.
func ArtifactDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("SWARM_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "swarm-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("testenv: artifact directory: %v", err)
	}
	return dir
}
