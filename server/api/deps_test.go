package api_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImports enforces the package doc: of this repository only swarm,
// swarm/wire and server/admission, so that client/ can import api without
// the server or the block engine.
func TestImports(t *testing.T) {
	allowed := map[string]bool{
		"github.com/swarmllm/swarm/swarm":            true,
		"github.com/swarmllm/swarm/swarm/wire":       true,
		"github.com/swarmllm/swarm/server/admission": true,
	}
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
			if strings.HasPrefix(path, "github.com/swarmllm/swarm/") {
				require.True(t, allowed[path], "%s imports %s", name, path)
			}
		}
	}
}
