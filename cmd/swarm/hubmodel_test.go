package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/hub/hubtest"
)

// publishTiny writes a 4-block synthesized model as a GGUF file and as 2
// safetensors shards, and serves them from a local hub-shaped server as
// org/tiny-GGUF and org/tiny. It returns the server and the local paths.
func publishTiny(t *testing.T) (srv *hubtest.Server, ggufPath, hfDir string) {
	t.Helper()
	c := synth.DefaultConfig()
	c.Layers = 4
	dir := t.TempDir()
	ggufDir := filepath.Join(dir, "gguf")
	require.NoError(t, os.MkdirAll(ggufDir, 0o755))
	ggufPath = filepath.Join(ggufDir, "tiny-F32.gguf")
	require.NoError(t, synth.WriteGGUF(ggufPath, c))
	hfDir = filepath.Join(dir, "hf")
	require.NoError(t, synth.WriteHFShards(hfDir, c, 2))
	srv = hubtest.New(t)
	srv.AddDir(t, "org/tiny-GGUF", ggufDir)
	srv.AddDir(t, "org/tiny", hfDir)
	return srv, ggufPath, hfDir
}

// hubEnv points the swarm processes started next at srv with an empty
// cache, and returns the cache's hub directory.
func hubEnv(t *testing.T, srv *hubtest.Server) string {
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("XDG_CACHE_HOME", cache)
	return filepath.Join(cache, "swarm", "models", "hub")
}

// TestGenerateFromHub: `swarm generate --model ORG/REPO` downloads the
// model from the hub (HF_ENDPOINT) and prints the same text as with the
// local file, for a GGUF repository and a sharded safetensors one.
func TestGenerateFromHub(t *testing.T) {
	srv, ggufPath, hfDir := publishTiny(t)
	gen := []string{"generate", "--local", "--temperature", "0", "--max-tokens", "12", "--prompt", "Once upon a time"}
	for repo, local := range map[string]string{"org/tiny-GGUF": ggufPath, "org/tiny": hfDir} {
		t.Run(repo, func(t *testing.T) {
			want, errOut, code := runSwarmProcess(t, append(gen, "--model", local)...)
			require.Equal(t, 0, code, errOut)
			require.True(t, strings.HasPrefix(want, "Once upon a time"), want)
			require.Greater(t, len(want), len("Once upon a time\n"), "some tokens were generated")

			hubDir := hubEnv(t, srv)
			wantInfo, errOut, code := runSwarmProcess(t, "model", "info", "--json", "--model", local)
			require.Equal(t, 0, code, errOut)
			gotInfo, errOut, code := runSwarmProcess(t, "model", "info", "--json", "--model", repo)
			require.Equal(t, 0, code, errOut)
			require.JSONEq(t, wantInfo, gotInfo)

			got, errOut, code := runSwarmProcess(t, append(gen, "--model", repo)...)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, want, got)
			// --local reads every byte: the files are complete and checked.
			snap := filepath.Join(hubDir, strings.ReplaceAll(repo, "/", "--"), "main")
			ranges, err := filepath.Glob(filepath.Join(snap, "*.ranges"))
			require.NoError(t, err)
			require.Empty(t, ranges)

			// Offline, the cached model still works.
			t.Setenv("HF_HUB_OFFLINE", "1")
			got, errOut, code = runSwarmProcess(t, append(gen, "--model", repo)...)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, want, got)
		})
	}
}

// TestServeFromHub: two `swarm serve --model org/tiny` processes, each
// with its own cache, download only their span, and `swarm generate
// --servers` over them with the head from the hub prints the text of a
// local run.
func TestServeFromHub(t *testing.T) {
	srv, _, hfDir := publishTiny(t)
	gen := []string{"generate", "--temperature", "0", "--max-tokens", "12", "--prompt", "Once upon a time"}
	want, errOut, code := runSwarmProcess(t, append(gen, "--local", "--model", hfDir)...)
	require.Equal(t, 0, code, errOut)

	var urls []string
	var caches []string
	for _, span := range []string{"0:2", "2:4"} {
		caches = append(caches, hubEnv(t, srv))
		urls = append(urls, startServeProc(t, "--model", "org/tiny", "--blocks", span).url)
	}
	hubEnv(t, srv)
	got, errOut, code := runSwarmProcess(t, append(gen, "--servers", strings.Join(urls, ","), "--model", "org/tiny")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, want, got)
	for _, cache := range caches {
		for _, shard := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"} {
			require.FileExists(t, filepath.Join(cache, "org--tiny", "main", shard+".ranges"),
				"a server holds part of each shard only (no embeddings, no LM head)")
		}
	}

	_, errOut, code = runSwarmProcess(t, "serve", "--model", "org/nope", "--blocks", "0:1", "--listen", "127.0.0.1:0")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "model org/nope: hub: list org/nope at "+srv.URL)
	require.Contains(t, errOut, "404 Not Found (no such repository, revision or file)")
	_, errOut, code = runSwarmProcess(t, "serve", "--model", "no/such/file.gguf", "--blocks", "0:1", "--listen", "127.0.0.1:0")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `model "no/such/file.gguf": no such file or directory, and not a hub repository`)
}
