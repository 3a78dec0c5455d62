package crdt

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeps keeps the core pure (STYLE.md, guard rails as tests): no net, os,
// time or sync among its direct imports, and no libp2p or net/http anywhere
// in its dependency graph.
func TestDeps(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	banned := map[string]bool{"net": true, "os": true, "time": true, "sync": true, "math/rand": true, "math/rand/v2": true}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			require.Falsef(t, banned[path], "%s imports %s", f, path)
			if strings.HasPrefix(path, "github.com/swarmllm/swarm/") {
				require.Equalf(t, "github.com/swarmllm/swarm/swarm", path, "%s imports %s; only the vocabulary is allowed", f, path)
			}
		}
	}
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		require.Falsef(t, strings.Contains(dep, "libp2p") || dep == "net/http", "crdt depends on %s", dep)
	}
}
