package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gguf "github.com/gpustack/gguf-parser-go"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/hub/hubtest"
	"github.com/swarmllm/swarm/internal/launch"
)

// publishTiny writes a 4-block synthesized model as a GGUF file and as 2
// safetensors shards, and serves them from a local hub-shaped server as
// org/tiny-GGUF and org/tiny. It returns the server and the local paths.
func publishTiny(t *testing.T) (srv *hubtest.Server, ggufPath, hfDir string) {
	c := synth.DefaultConfig()
	c.Layers = 4
	return publishModel(t, c)
}

// publishModel is publishTiny for the model c.
func publishModel(t *testing.T, c synth.Config) (srv *hubtest.Server, ggufPath, hfDir string) {
	t.Helper()
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

// blockTensors returns the byte ranges [start, end) of the block tensors
// ("blk.N.*", "model.layers.N.*") of a GGUF file or a safetensors shard,
// as the format's own header gives them (gguf-parser-go; the safetensors
// JSON header after its 8-byte length), and the prefix of the file that
// finding the header may download whatever is read (GGUF: hub.ResolveRepo
// documents max(256 KiB, twice the header); safetensors: the header).
func blockTensors(t *testing.T, path string) (blocks [][2]int64, probe int64) {
	t.Helper()
	if strings.HasSuffix(path, ".gguf") {
		gf, err := gguf.ParseGGUFFile(path)
		require.NoError(t, err)
		for _, ti := range gf.TensorInfos {
			if strings.HasPrefix(ti.Name, "blk.") {
				start := gf.TensorDataStartOffset + int64(ti.Offset)
				blocks = append(blocks, [2]int64{start, start + int64(ti.Bytes())})
			}
		}
		return blocks, max(256<<10, 2*gf.TensorDataStartOffset)
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	n := int64(binary.LittleEndian.Uint64(raw))
	var hdr map[string]struct {
		DataOffsets [2]int64 `json:"data_offsets"`
	}
	require.NoError(t, json.Unmarshal(raw[8:8+n], &hdr))
	for name, e := range hdr {
		if strings.HasPrefix(name, "model.layers.") {
			blocks = append(blocks, [2]int64{8 + n + e.DataOffsets[0], 8 + n + e.DataOffsets[1]})
		}
	}
	return blocks, 8 + n
}

// TestProxyFromHub: `swarm proxy --model ORG/REPO` resolves the repository
// on the hub (HF_ENDPOINT), downloads only what a client needs (no byte of
// any block tensor past the header probe: the hub server's record of what
// it sent; the model's blocks are larger than the probe), and serves
// the greedy completion a local `swarm generate` prints, for a GGUF
// repository and a sharded safetensors one. Offline, the cached head
// serves again; an unknown repository fails the start with the hub's
// answer, and a gated one without HF_TOKEN. `swarm chat --model ORG/REPO` runs the hub model in its process.
func TestProxyFromHub(t *testing.T) {
	c := synth.DefaultConfig()
	c.Layers, c.Dim, c.FFN = 4, 128, 256 // ~590 KB per block, f32
	srv, ggufPath, hfDir := publishModel(t, c)
	const prompt = "Once upon a time"
	gen := []string{"generate", "--local", "--temperature", "0", "--max-tokens", "12", "--prompt", prompt}
	for repo, local := range map[string]string{"org/tiny-GGUF": ggufPath, "org/tiny": hfDir} {
		t.Run(repo, func(t *testing.T) {
			want, errOut, code := runSwarmProcess(t, append(gen, "--model", local)...)
			require.Equal(t, 0, code, errOut)
			want = strings.TrimSuffix(strings.TrimPrefix(want, prompt), "\n")
			require.NotEmpty(t, want)
			// The proxy's JSON carries invalid UTF-8 as U+FFFD, as --json does.
			wantJSON := generateJSONOutput(t, append(gen, "--json", "--model", local)...).Text
			var urls []string
			for _, span := range []string{"0:2", "2:4"} {
				urls = append(urls, startServeProc(t, "--model", local, "--blocks", span).url)
			}

			hubDir := hubEnv(t, srv)
			srv.Reset()
			for _, offline := range []string{"", "1"} {
				t.Setenv("HF_HUB_OFFLINE", offline)
				proxy := startProc(t, swarmCmd(t, "proxy", "--listen", "127.0.0.1:0", "--model", repo, "--servers", strings.Join(urls, ",")),
					launch.ProxyReadyPrefix)
				status, _, body := completion(t, proxy.url, map[string]any{"model": "synth", "prompt": prompt, "max_tokens": 12, "temperature": 0}, nil)
				require.Equal(t, 200, status, "offline=%q: %v", offline, body)
				require.Equal(t, wantJSON, body["choices"].([]any)[0].(map[string]any)["text"], "offline=%q", offline)
			}

			dir := local
			if strings.HasSuffix(local, ".gguf") {
				dir = filepath.Dir(local)
			}
			weights, err := filepath.Glob(filepath.Join(dir, "*"))
			require.NoError(t, err)
			checked, sent := 0, srv.Sent()
			for _, w := range weights {
				if !strings.HasSuffix(w, ".gguf") && !strings.HasSuffix(w, ".safetensors") {
					continue
				}
				name, past := filepath.Base(w), int64(0)
				blocks, probe := blockTensors(t, w)
				for _, r := range sent {
					if r.Path != name || r.End <= probe {
						continue
					}
					past += r.End - max(r.Start, probe)
					for _, b := range blocks {
						require.Falsef(t, max(r.Start, probe) < b[1] && b[0] < r.End, "%s: bytes [%d, %d) of a block tensor [%d, %d) were downloaded", name, r.Start, r.End, b[0], b[1])
					}
				}
				require.Positivef(t, past, "%s: the head's tensors past the probe come from it", name)
				require.FileExists(t, filepath.Join(hubDir, strings.ReplaceAll(repo, "/", "--"), "main", name+".ranges"), "partly downloaded")
				checked++
			}
			require.Equal(t, map[string]int{"org/tiny-GGUF": 1, "org/tiny": 2}[repo], checked, "weights files")

			t.Setenv("HF_HUB_OFFLINE", "") // a local chat downloads the blocks too
			out, errOut := runChat(t, prompt+"\n", "--model", repo, "--temperature", "0", "--max-tokens", "12")
			require.Equal(t, want+"\n", out, errOut)
		})
	}
	hubEnv(t, srv)
	_, errOut, code := runSwarmProcess(t, "proxy", "--listen", "127.0.0.1:0", "--model", "org/nope", "--servers", "127.0.0.1:1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "model org/nope: hub: list org/nope at "+srv.URL)

	// A gated repository needs HF_TOKEN.
	srv.Set(func(s *hubtest.Server) { s.Token = "secret" })
	_, errOut, code = runSwarmProcess(t, "proxy", "--listen", "127.0.0.1:0", "--model", "org/tiny", "--servers", "127.0.0.1:1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "a gated or private repository needs HF_TOKEN")
	t.Setenv("HF_TOKEN", "secret")
	startProc(t, swarmCmd(t, "proxy", "--listen", "127.0.0.1:0", "--model", "org/tiny", "--servers", "127.0.0.1:1"), launch.ProxyReadyPrefix)
}
