package ingress_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImports enforces the package docs: ingress, ingress/openai and
// ingress/petals never import server/ (other than server/api), registry/,
// node/, sim/ or cmd/, and the core never imports its front ends.
func TestImports(t *testing.T) {
	for _, dir := range []string{".", "openai", "petals"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
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
				banned := []string{"server", "registry", "node", "sim", "cmd"}
				if dir == "." {
					banned = append(banned, "ingress/openai", "ingress/petals", "ingress/ingresstest")
				}
				for _, b := range banned {
					p := "github.com/swarmllm/swarm/" + b
					if path == "github.com/swarmllm/swarm/server/api" {
						continue
					}
					require.False(t, path == p || strings.HasPrefix(path, p+"/"), "%s imports %s", name, path)
				}
			}
		}
	}
	_, err := os.Stat("doc.go")
	require.NoError(t, err)
}
