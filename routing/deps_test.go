package routing

import (
	"go/build"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPurity enforces the package doc: routing is pure. Its own (non-test)
// files import neither net, os, time nor sync (directly) and no package of
// this repository but swarm; nothing it depends on, transitively, is
// libp2p or net/http (STYLE.md pattern 10).
func TestPurity(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	require.NotEmpty(t, pkg.Imports)
	for _, imp := range pkg.Imports {
		for _, banned := range []string{"net", "os", "time", "sync"} {
			require.Falsef(t, imp == banned || strings.HasPrefix(imp, banned+"/"),
				"routing imports %s directly; it must stay pure (no I/O, clocks or goroutines)", imp)
		}
		if strings.HasPrefix(imp, "github.com/swarmllm/swarm/") {
			require.Equalf(t, "github.com/swarmllm/swarm/swarm", imp, "routing may import only the swarm vocabulary from this repository")
		}
	}

	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "go list -deps: %s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/swarmllm/swarm/routing")
	for _, d := range deps {
		require.NotContainsf(t, d, "libp2p", "routing depends on %s transitively", d)
		require.NotEqualf(t, "net/http", d, "routing depends on net/http transitively")
	}
}
