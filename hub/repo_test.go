package hub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/hub"
	"github.com/swarmllm/swarm/hub/hubtest"
)

func TestParseRepoRef(t *testing.T) {
	for in, want := range map[string]hub.RepoRef{
		"Qwen/Qwen2.5-7B-Instruct":                  {Repo: "Qwen/Qwen2.5-7B-Instruct", Revision: "main"},
		"bartowski/Llama-3.2-1B-GGUF:Q4_K_M":        {Repo: "bartowski/Llama-3.2-1B-GGUF", Revision: "main", File: "Q4_K_M"},
		"org/m@v1.0":                                {Repo: "org/m", Revision: "v1.0"},
		"org/m@0123abc:sub/dir/model-Q8_0.gguf":     {Repo: "org/m", Revision: "0123abc", File: "sub/dir/model-Q8_0.gguf"},
		"karpathy/tinyllamas:stories260K/x.gguf":    {Repo: "karpathy/tinyllamas", Revision: "main", File: "stories260K/x.gguf"},
		"a_b.c/d-e_f.g@refs/pr/1:model.safetensors": {Repo: "a_b.c/d-e_f.g", Revision: "refs/pr/1", File: "model.safetensors"},
	} {
		got, err := hub.ParseRepoRef(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	require.Equal(t, "org/m@v1:Q4_K_M", hub.RepoRef{Repo: "org/m", Revision: "v1", File: "Q4_K_M"}.String())
	for _, in := range []string{"", "model.gguf", "./models/x.gguf", "/abs/path", "org/", "/repo", "a/b/c", "org/m:", "org/m@",
		"org/m:../etc/passwd", "org/m:/abs", "org/..", "-org/m", "org/m m", "org--x/m", "org/m@a..b"} {
		_, err := hub.ParseRepoRef(in)
		require.ErrorIs(t, err, hub.ErrRepoRef, "%q", in)
	}
}

// tinyGGUF returns a small synthesized GGUF file's bytes.
func tinyGGUF(t *testing.T) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, synth.WriteGGUF(p, synth.DefaultConfig()))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// TestResolveRepoPicksTheModel: which files a reference resolves to, and
// the errors for ambiguous, missing and unknown ones.
func TestResolveRepoPicksTheModel(t *testing.T) {
	srv := hubtest.New(t)
	g := tinyGGUF(t)
	srv.AddFile("org/one-GGUF", "README.md", []byte("# one\n"))
	srv.AddFile("org/one-GGUF", "one-Q8_0.gguf", g)
	for _, f := range []string{"model-Q4_K_M.gguf", "model-Q8_0.gguf", "deep/model-Q4_K_S.gguf"} {
		srv.AddFile("org/many-GGUF", f, g)
	}
	st := t.TempDir()
	require.NoError(t, synth.WriteHF(filepath.Join(st, "single"), synth.DefaultConfig()))
	require.NoError(t, synth.WriteHFShards(filepath.Join(st, "sharded"), synth.DefaultConfig(), 2))
	srv.AddDir(t, "org/single", filepath.Join(st, "single"))
	srv.AddDir(t, "org/sharded", filepath.Join(st, "sharded"))
	srv.AddFile("org/both", "model.gguf", g)
	srv.AddDir(t, "org/both", filepath.Join(st, "single"))
	srv.AddFile("org/docs", "README.md", []byte("nothing here"))
	srv.AddFile("org/noweights", "config.json", []byte("{}"))

	cache := t.TempDir()
	snap := func(t *testing.T, ref string) (*hub.Snapshot, error) {
		t.Helper()
		r, err := hub.ParseRepoRef(ref)
		require.NoError(t, err)
		return hub.ResolveRepo(t.Context(), r, hub.Options{CacheDir: cache, Endpoint: srv.URL})
	}
	for ref, want := range map[string]string{
		"org/one-GGUF":                         "one-Q8_0.gguf",
		"org/many-GGUF:Q8_0":                   "model-Q8_0.gguf",
		"org/many-GGUF:q4_k_m":                 "model-Q4_K_M.gguf",
		"org/many-GGUF:Q4_K_S":                 "deep/model-Q4_K_S.gguf",
		"org/many-GGUF:deep/model-Q4_K_S.gguf": "deep/model-Q4_K_S.gguf",
		"org/both":                             "model.gguf",
	} {
		s, err := snap(t, ref)
		require.NoError(t, err, ref)
		require.Equal(t, hub.LayoutGGUF, s.Layout, ref)
		require.Equal(t, hubtest.Commit, s.Commit, ref)
		require.Equal(t, filepath.Join(s.Dir, filepath.FromSlash(want)), s.Path, ref)
		require.Equal(t, filepath.Join(cache, "hub", s.Ref.Repo[:3]+"--"+s.Ref.Repo[4:], "main"), s.Dir)
	}
	for ref, src := range map[string]string{"org/single": "single", "org/sharded": "sharded", "org/both:model.safetensors": "single"} {
		s, err := snap(t, ref)
		require.NoError(t, err, ref)
		require.Equal(t, hub.LayoutSafetensors, s.Layout, ref)
		require.Equal(t, s.Dir, s.Path, ref)
		entries, err := os.ReadDir(filepath.Join(st, src))
		require.NoError(t, err)
		for _, e := range entries {
			want, err := os.ReadFile(filepath.Join(st, src, e.Name()))
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(s.Dir, e.Name()))
			require.NoError(t, err, "%s: %s", ref, e.Name())
			if filepath.Ext(e.Name()) == ".safetensors" {
				require.Len(t, got, len(want), "%s: %s is a sparse file of the full size", ref, e.Name())
			} else {
				require.Equal(t, want, got, "%s: %s is downloaded whole", ref, e.Name())
			}
		}
	}

	for ref, msg := range map[string]string{
		"org/many-GGUF":      "org/many-GGUF has 3 .gguf files: deep/model-Q4_K_S.gguf, model-Q4_K_M.gguf, model-Q8_0.gguf; pick one with org/many-GGUF:FILE",
		"org/many-GGUF:Q4_K": `"Q4_K" matches 2 .gguf files of org/many-GGUF: deep/model-Q4_K_S.gguf, model-Q4_K_M.gguf`,
		"org/many-GGUF:Q5":   `no .gguf file of org/many-GGUF matches "Q5"; it has deep/model-Q4_K_S.gguf, model-Q4_K_M.gguf, model-Q8_0.gguf`,
		"org/single:Q4_K_M":  `org/single has no .gguf file to match "Q4_K_M"`,
		"org/docs":           "org/docs has neither a .gguf file nor config.json with safetensors weights",
		"org/noweights":      "org/noweights has config.json but neither model.safetensors nor model.safetensors.index.json",
	} {
		_, err := snap(t, ref)
		require.ErrorIs(t, err, hub.ErrNoModel, ref)
		require.ErrorContains(t, err, msg, ref)
	}
	// Files come from the commit the revision pointed at when listed.
	resolves := 0
	for _, r := range srv.Requests() {
		if strings.Contains(r, "/resolve/") {
			resolves++
			require.Contains(t, r, "/resolve/"+hubtest.Commit+"/")
		}
	}
	require.NotZero(t, resolves)

	// The listing is paged (Link: <...>; rel="next") as the hub pages it.
	srv.Set(func(s *hubtest.Server) { s.PageSize = 2 })
	srv.Reset()
	s, err := snap(t, "org/sharded")
	require.NoError(t, err)
	require.Equal(t, hub.LayoutSafetensors, s.Layout)
	pages := 0
	for _, r := range srv.Requests() {
		if filepath.Dir(r) == "/api/models/org/sharded/tree" {
			pages++
		}
	}
	entries, err := os.ReadDir(filepath.Join(st, "sharded"))
	require.NoError(t, err)
	require.Equal(t, (len(entries)+1)/2, pages, "%d entries, 2 a page: %v", len(entries), srv.Requests())
	srv.Set(func(s *hubtest.Server) { s.PageSize = 1000 })

	_, err = snap(t, "org/missing")
	require.ErrorIs(t, err, hub.ErrDownload)
	require.ErrorContains(t, err, "404 Not Found (no such repository, revision or file)")
	require.ErrorContains(t, err, srv.URL+"/api/models/org/missing/revision/main")
	_, err = snap(t, "org/one-GGUF@nope")
	require.ErrorIs(t, err, hub.ErrDownload)
}
