package modelsrc_test

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	gguf "github.com/gpustack/gguf-parser-go"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/hub"
	"github.com/swarmllm/swarm/hub/hubtest"
	"github.com/swarmllm/swarm/hub/modelsrc"
	"github.com/swarmllm/swarm/swarm"
)

// probeSlack is the documented bound (hub.ResolveRepo, ggufProbe) on the
// bytes past a GGUF header that finding the header may download.
const probeSlack = 256 << 10

// model is a synthesized model published on a fake hub.
type model struct {
	repo   string
	local  string                   // the same model as a local path
	tensor map[string]map[string]iv // file -> tensor name -> byte range, from the format's own header
	header map[string]int64         // file -> header length (bytes before the first tensor's data)
}

// iv is a half-open byte range.
type iv struct{ start, end int64 }

// bigConfig is a model whose blocks (~590 KB each, f32) are larger than
// the GGUF probe, so that downloading one block too many shows.
func bigConfig() synth.Config {
	c := synth.DefaultConfig()
	c.Layers, c.Dim, c.FFN, c.Heads, c.KVHeads = 8, 128, 256, 4, 2
	return c
}

// publish writes c as a GGUF file and as 4-shard safetensors, publishes
// both on a fake hub, and reads their tensor layout with gguf-parser-go
// and from the safetensors headers.
func publish(t *testing.T, c synth.Config) (*hubtest.Server, map[string]model) {
	t.Helper()
	srv := hubtest.New(t)
	dir := t.TempDir()
	ggufDir := filepath.Join(dir, "gguf")
	require.NoError(t, os.MkdirAll(ggufDir, 0o755))
	ggufPath := filepath.Join(ggufDir, "tiny-F32.gguf")
	require.NoError(t, synth.WriteGGUF(ggufPath, c))
	hfDir := filepath.Join(dir, "hf")
	require.NoError(t, synth.WriteHFShards(hfDir, c, 4))
	srv.AddDir(t, "org/tiny-GGUF", ggufDir)
	srv.AddDir(t, "org/tiny", hfDir)

	g := model{repo: "org/tiny-GGUF", local: ggufPath, tensor: map[string]map[string]iv{}, header: map[string]int64{}}
	gf, err := gguf.ParseGGUFFile(ggufPath)
	require.NoError(t, err)
	g.header["tiny-F32.gguf"] = gf.TensorDataStartOffset
	g.tensor["tiny-F32.gguf"] = map[string]iv{}
	for _, ti := range gf.TensorInfos {
		s := gf.TensorDataStartOffset + int64(ti.Offset)
		g.tensor["tiny-F32.gguf"][ti.Name] = iv{s, s + int64(ti.Bytes())}
	}

	h := model{repo: "org/tiny", local: hfDir, tensor: map[string]map[string]iv{}, header: map[string]int64{}}
	shards, err := filepath.Glob(filepath.Join(hfDir, "*.safetensors"))
	require.NoError(t, err)
	require.Len(t, shards, 4)
	for _, p := range shards {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		n := int64(binary.LittleEndian.Uint64(raw))
		var hdr map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw[8:8+n], &hdr))
		name := filepath.Base(p)
		h.header[name] = 8 + n
		h.tensor[name] = map[string]iv{}
		for k, v := range hdr {
			if k == "__metadata__" {
				continue
			}
			var e struct {
				DataOffsets [2]int64 `json:"data_offsets"`
			}
			require.NoError(t, json.Unmarshal(v, &e))
			h.tensor[name][k] = iv{8 + n + e.DataOffsets[0], 8 + n + e.DataOffsets[1]}
		}
	}
	return srv, map[string]model{"gguf": g, "safetensors": h}
}

// blockOf returns the block a tensor name belongs to, or -1.
func blockOf(name string) int {
	for _, prefix := range []string{"blk.", "model.layers."} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			b := 0
			for _, r := range rest {
				if r < '0' || r > '9' {
					break
				}
				b = b*10 + int(r-'0')
			}
			return b
		}
	}
	return -1
}

// sentByFile merges the ranges sent per weights file and requires that no
// byte was sent twice.
func sentByFile(t *testing.T, sent []hubtest.Range, weights map[string]map[string]iv) map[string][]iv {
	t.Helper()
	out := map[string][]iv{}
	for _, r := range sent {
		if _, ok := weights[r.Path]; ok {
			out[r.Path] = append(out[r.Path], iv{r.Start, r.End})
		}
	}
	for p, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
		merged := rs[:1]
		for _, r := range rs[1:] {
			last := &merged[len(merged)-1]
			require.LessOrEqualf(t, last.end, r.start, "%s: bytes %v and %v were both sent", p, *last, r)
			if last.end == r.start {
				last.end = r.end
			} else {
				merged = append(merged, r)
			}
		}
		out[p] = merged
	}
	return out
}

// outside returns the bytes of rs outside all of allowed.
func outside(rs []iv, allowed []iv) []iv {
	var out []iv
	for _, r := range rs {
		pieces := []iv{r}
		for _, a := range allowed {
			var next []iv
			for _, p := range pieces {
				if p.end <= a.start || p.start >= a.end {
					next = append(next, p)
					continue
				}
				if p.start < a.start {
					next = append(next, iv{p.start, a.start})
				}
				if p.end > a.end {
					next = append(next, iv{a.end, p.end})
				}
			}
			pieces = next
		}
		out = append(out, pieces...)
	}
	return out
}

func covered(rs []iv, want iv) bool { return len(outside([]iv{want}, rs)) == 0 }

// wanted returns, per weights file, the header and the tensors for which
// keep is true.
func wanted(m model, keep func(name string) bool) map[string][]iv {
	out := map[string][]iv{}
	for file, ts := range m.tensor {
		out[file] = append(out[file], iv{0, m.header[file]})
		for name, r := range ts {
			if keep(name) {
				out[file] = append(out[file], r)
			}
		}
	}
	return out
}

// checkSent requires that every wanted byte was sent, no byte twice, and
// nothing else but (for GGUF) up to the probe's slack right after the
// header.
func checkSent(t *testing.T, layout string, m model, sent []hubtest.Range, want map[string][]iv) {
	t.Helper()
	got := sentByFile(t, sent, m.tensor)
	for file, ws := range want {
		for _, w := range ws {
			require.Truef(t, covered(got[file], w), "%s: bytes %v were needed but not downloaded", file, w)
		}
		extra := outside(got[file], ws)
		if layout == "gguf" {
			h := m.header[file]
			extra = outside(extra, []iv{{h, max(2*h, probeSlack)}})
		}
		require.Emptyf(t, extra, "%s: bytes downloaded that the load does not need", file)
	}
}

func forward(t *testing.T, e blocks.Engine, x []float32, n int) []float32 {
	t.Helper()
	s, err := e.NewSession(e.Span(), 16)
	require.NoError(t, err)
	defer s.Close()
	y, err := s.Forward(t.Context(), 0, x, n)
	require.NoError(t, err)
	return y
}

// TestSpanDownloadsOnlyItsTensors: a server's load of blocks [5, 7) through
// the hub downloads the headers and exactly those blocks' tensors (sizes
// from the formats' own headers), and computes what the local file does.
func TestSpanDownloadsOnlyItsTensors(t *testing.T) {
	srv, models := publish(t, bigConfig())
	span := swarm.Span{Start: 5, End: 7}
	for _, layout := range []string{"gguf", "safetensors"} {
		t.Run(layout, func(t *testing.T) {
			m := models[layout]
			srv.Reset()
			src, err := modelsrc.Resolve(t.Context(), m.repo, hub.Options{CacheDir: t.TempDir(), Endpoint: srv.URL})
			require.NoError(t, err)
			require.NotNil(t, src.Snapshot)
			remote, err := blocks.Open(src.Path, src.Options()...)
			require.NoError(t, err)
			defer remote.Close()
			e, err := remote.LoadSpan(span)
			require.NoError(t, err)
			defer e.Close()
			checkSent(t, layout, m, srv.Sent(), wanted(m, func(name string) bool {
				b := blockOf(name)
				return b >= span.Start && b < span.End
			}))

			local, err := blocks.Open(m.local)
			require.NoError(t, err)
			defer local.Close()
			le, err := local.LoadSpan(span)
			require.NoError(t, err)
			defer le.Close()
			require.Equal(t, local.Info(), remote.Info())
			rng := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, 3*local.Info().DModel)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			require.Equal(t, forward(t, le, x, 3), forward(t, e, x, 3))
		})
	}
}

// TestHeadDownloadsNoBlockTensor: a client's LoadHead downloads the
// headers, the embeddings, final norm and LM head, and no block tensor.
func TestHeadDownloadsNoBlockTensor(t *testing.T) {
	srv, models := publish(t, bigConfig())
	for _, layout := range []string{"gguf", "safetensors"} {
		t.Run(layout, func(t *testing.T) {
			m := models[layout]
			srv.Reset()
			src, err := modelsrc.Resolve(t.Context(), m.repo, hub.Options{CacheDir: t.TempDir(), Endpoint: srv.URL})
			require.NoError(t, err)
			remote, err := blocks.Open(src.Path, src.Options()...)
			require.NoError(t, err)
			defer remote.Close()
			head, err := remote.LoadHead()
			require.NoError(t, err)
			checkSent(t, layout, m, srv.Sent(), wanted(m, func(name string) bool { return blockOf(name) < 0 }))
			got := sentByFile(t, srv.Sent(), m.tensor)
			for file, ts := range m.tensor {
				for name, r := range ts {
					if blockOf(name) >= 0 {
						require.Truef(t, len(outside([]iv{r}, got[file])) == 1 && outside([]iv{r}, got[file])[0] == r,
							"%s: block tensor %s was (partly) downloaded by a head load", file, name)
					}
				}
			}

			local, err := blocks.Open(m.local)
			require.NoError(t, err)
			defer local.Close()
			lh, err := local.LoadHead()
			require.NoError(t, err)
			want, err := lh.Embed([]int{1, 7, 300})
			require.NoError(t, err)
			emb, err := head.Embed([]int{1, 7, 300})
			require.NoError(t, err)
			require.Equal(t, want, emb)
			require.NotNil(t, head.Tokenizer())
		})
	}
}

// TestConcurrentLoadsShareDownloads: two models opened on one snapshot
// (as a server's probe and its engine are) loading spans and the head at
// once download each byte once.
func TestConcurrentLoadsShareDownloads(t *testing.T) {
	srv, models := publish(t, bigConfig())
	for _, layout := range []string{"gguf", "safetensors"} {
		t.Run(layout, func(t *testing.T) {
			m := models[layout]
			srv.Reset()
			src, err := modelsrc.Resolve(t.Context(), m.repo, hub.Options{CacheDir: t.TempDir(), Endpoint: srv.URL})
			require.NoError(t, err)
			var opened []*blocks.Model
			for range 2 {
				bm, err := blocks.Open(src.Path, src.Options()...)
				require.NoError(t, err)
				defer bm.Close()
				opened = append(opened, bm)
			}
			errs := make(chan error, 4)
			for i, span := range []swarm.Span{{Start: 0, End: 5}, {Start: 3, End: 8}, {Start: 2, End: 6}} {
				go func() {
					e, err := opened[i%2].LoadSpan(span)
					if err == nil {
						err = e.Close()
					}
					errs <- err
				}()
			}
			go func() {
				_, err := opened[1].LoadHead()
				errs <- err
			}()
			for range 4 {
				require.NoError(t, <-errs)
			}
			checkSent(t, layout, m, srv.Sent(), wanted(m, func(string) bool { return true }))
		})
	}
}
