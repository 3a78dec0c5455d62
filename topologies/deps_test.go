package topologies

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImports enforces the package doc: no package of this repository, no
// network, clock or goroutine machinery.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	for _, imp := range pkg.Imports {
		for _, banned := range []string{"net", "time", "sync"} {
			require.Falsef(t, imp == banned || strings.HasPrefix(imp, banned+"/"), "topologies imports %s", imp)
		}
		require.Falsef(t, strings.HasPrefix(imp, "github.com/swarmllm/swarm"), "topologies imports %s", imp)
	}
}
