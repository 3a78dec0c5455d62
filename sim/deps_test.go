package sim

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImports enforces the package doc: sim does no I/O and starts no
// goroutines (no net, os or sync), and from this repository it uses only the
// pure packages it drives.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	allowed := map[string]bool{
		"github.com/swarmllm/swarm/placement":  true,
		"github.com/swarmllm/swarm/routing":    true,
		"github.com/swarmllm/swarm/swarm":      true,
		"github.com/swarmllm/swarm/topologies": true,
	}
	for _, imp := range pkg.Imports {
		for _, banned := range []string{"net", "os", "sync"} {
			require.Falsef(t, imp == banned || strings.HasPrefix(imp, banned+"/"), "sim imports %s", imp)
		}
		if strings.HasPrefix(imp, "github.com/swarmllm/swarm/") {
			require.Truef(t, allowed[imp], "sim imports %s; only placement, routing, swarm and topologies are allowed", imp)
		}
	}
	require.Contains(t, pkg.Imports, "github.com/swarmllm/swarm/placement", "sim must drive the real placement package")
	require.Contains(t, pkg.Imports, "github.com/swarmllm/swarm/routing", "sim must drive the real routing package")
}
