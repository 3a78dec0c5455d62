package server_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImports enforces the package doc: the server never imports the
// client, the registry, placement, the simulator or the CLI.
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
			for _, banned := range []string{"client", "registry", "placement", "sim", "cmd"} {
				p := "github.com/swarmllm/swarm/" + banned
				require.False(t, path == p || strings.HasPrefix(path, p+"/"), "%s imports %s", name, path)
			}
		}
	}
}
