// Package testenv finds the shared test data (../shared beside the
// repository, or $SWARM_SHARED) and builds the swarm binary for end-to-end
// tests. Only tests import it.
//
// This package must never import production packages of this repository.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// RepoRoot returns the directory holding go.mod, found by walking up from
// the working directory of the test.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("testenv: getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("testenv: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// SharedDir returns the shared data directory: $SWARM_SHARED if set, else
// ../shared next to the repository root. It skips the test with a clear
// message when the directory does not exist.
func SharedDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("SWARM_SHARED")
	if dir == "" {
		dir = filepath.Join(RepoRoot(tb), "..", "shared")
	}
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("testenv: shared data directory %s is absent (set SWARM_SHARED): %v", dir, err)
	}
	return dir
}

// SharedFile returns the path of a file under SharedDir, skipping the test
// when the shared directory is absent and failing it when the file is missing.
func SharedFile(tb testing.TB, rel ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{SharedDir(tb)}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("testenv: shared file missing: %v", err)
	}
	return p
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
	buildOut  []byte
)

// SwarmBinary builds ./cmd/swarm once per test process (into a temporary
// directory that lives as long as the process) and returns its path.
func SwarmBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "swarm-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "swarm")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/swarm")
		cmd.Dir = RepoRoot(tb)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		tb.Fatalf("testenv: go build ./cmd/swarm: %v\n%s", buildErr, buildOut)
	}
	return buildPath
}
