package admission_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImports enforces the package doc: no networking and no package of
// this repository other than swarm.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			require.False(t, path == "net" || strings.HasPrefix(path, "net/"), "%s imports %s", name, path)
			if strings.HasPrefix(path, "github.com/swarmllm/swarm/") {
				require.Equal(t, "github.com/swarmllm/swarm/swarm", path, "%s imports %s", name, path)
			}
		}
	}
}
