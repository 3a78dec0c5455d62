// Package swarm_test holds repository-wide guard rails: every package has a
// doc comment saying what it is for.
package swarm_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryPackageHasDoc walks the repository and requires a package doc
// comment in every non-test package (STYLE.md: "A root test requires a
// package doc in every package").
func TestEveryPackageHasDoc(t *testing.T) {
	docs := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		docs[dir] = docs[dir] || (f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "")
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	for dir, ok := range docs {
		require.Truef(t, ok, "package in %s has no package doc comment", dir)
	}
}
