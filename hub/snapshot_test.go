package hub_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	gguf "github.com/gpustack/gguf-parser-go"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/hub"
	"github.com/swarmllm/swarm/hub/hubtest"
)

// bigGGUF publishes a ~5 MB synthesized GGUF file as org/big-GGUF and
// returns its bytes and the byte ranges of two block tensors (from
// gguf-parser-go), each larger than 100 000 bytes.
func bigGGUF(t *testing.T, srv *hubtest.Server) (data []byte, a, b [2]int64) {
	t.Helper()
	c := synth.DefaultConfig()
	c.Layers, c.Dim, c.FFN, c.Heads, c.KVHeads = 8, 128, 256, 4, 2
	p := filepath.Join(t.TempDir(), "big.gguf")
	require.NoError(t, synth.WriteGGUF(p, c))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	srv.AddFile("org/big-GGUF", "big.gguf", data)
	gf, err := gguf.ParseGGUFFile(p)
	require.NoError(t, err)
	rangeOf := func(name string) [2]int64 {
		ti, ok := gf.TensorInfos.Get(name)
		require.True(t, ok, name)
		s := gf.TensorDataStartOffset + int64(ti.Offset)
		return [2]int64{s, s + int64(ti.Bytes())}
	}
	return data, rangeOf("blk.6.ffn_up.weight"), rangeOf("blk.2.attn_q.weight")
}

func resolveBig(t *testing.T, cache, endpoint string, offline bool) (*hub.Snapshot, error) {
	t.Helper()
	return hub.ResolveRepo(t.Context(), hub.RepoRef{Repo: "org/big-GGUF"}, hub.Options{CacheDir: cache, Endpoint: endpoint, Offline: offline})
}

// readRange reads [r0, r1) of the snapshot's GGUF file through Open.
func readRange(t *testing.T, s *hub.Snapshot, r [2]int64) ([]byte, error) {
	t.Helper()
	f, err := s.Open(s.Path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, r[1]-r[0])
	_, err = f.ReadAt(buf, r[0])
	return buf, err
}

// sentTotal sums the bytes of sent ranges and merges them; it fails on a
// byte sent twice.
func sentTotal(t *testing.T, sent []hubtest.Range) [][2]int64 {
	t.Helper()
	sort.Slice(sent, func(i, j int) bool { return sent[i].Start < sent[j].Start })
	var out [][2]int64
	for _, r := range sent {
		if n := len(out); n > 0 && out[n-1][1] >= r.Start {
			require.Equal(t, out[n-1][1], r.Start, "byte %d sent twice", r.Start)
			out[n-1][1] = r.End
			continue
		}
		out = append(out, [2]int64{r.Start, r.End})
	}
	return out
}

// TestResumeAfterInterruptedTransfer: a transfer broken after 100 000
// bytes resumes from there, at once when the next request succeeds, else
// in a later process from the sidecar, never downloading a byte twice.
func TestResumeAfterInterruptedTransfer(t *testing.T) {
	srv := hubtest.New(t)
	data, tensor, _ := bigGGUF(t, srv)
	const cut = 100_000

	t.Run("same call", func(t *testing.T) {
		s, err := resolveBig(t, t.TempDir(), srv.URL, false)
		require.NoError(t, err)
		srv.Reset()
		srv.Set(func(s *hubtest.Server) { s.CutAfter = cut })
		got, err := readRange(t, s, tensor)
		require.NoError(t, err)
		require.Equal(t, data[tensor[0]:tensor[1]], got)
		require.Equal(t, [][2]int64{tensor}, sentTotal(t, srv.Sent()))
		require.Equal(t, tensor[0]+cut, rangeStarting(srv.Sent(), tensor[0]+cut), "the second request starts where the first stopped")
	})

	t.Run("next process", func(t *testing.T) {
		cache := t.TempDir()
		s, err := resolveBig(t, cache, srv.URL, false)
		require.NoError(t, err)
		srv.Reset()
		srv.Set(func(s *hubtest.Server) { s.CutAfter, s.FailNext = cut, 1 })
		_, err = readRange(t, s, tensor)
		require.ErrorIs(t, err, hub.ErrDownload)
		require.ErrorContains(t, err, "503 Service Unavailable")
		require.Equal(t, [][2]int64{{tensor[0], tensor[0] + cut}}, sentTotal(t, srv.Sent()))
		require.FileExists(t, s.Path+".ranges")

		srv.Reset()
		again, err := resolveBig(t, cache, srv.URL, false)
		require.NoError(t, err)
		got, err := readRange(t, again, tensor)
		require.NoError(t, err)
		require.Equal(t, data[tensor[0]:tensor[1]], got)
		require.Equal(t, [][2]int64{{tensor[0] + cut, tensor[1]}}, sentTotal(t, srv.Sent()),
			"neither the header nor the first %d bytes are downloaded again", cut)
	})
}

// rangeStarting returns start if some sent range starts there, else -1.
func rangeStarting(sent []hubtest.Range, start int64) int64 {
	for _, r := range sent {
		if r.Start == start {
			return start
		}
	}
	return -1
}

// TestOffline: without the endpoint a cached model still resolves and
// reads what the cache holds; what it lacks is a clear error naming the
// repository, the endpoint and the cache.
func TestOffline(t *testing.T) {
	srv := hubtest.New(t)
	data, a, b := bigGGUF(t, srv)
	down := hubtest.New(t)
	down.Close() // connection refused: an unreachable endpoint

	t.Run("nothing cached", func(t *testing.T) {
		cache := t.TempDir()
		_, err := resolveBig(t, cache, down.URL, false)
		require.ErrorIs(t, err, hub.ErrOffline)
		require.ErrorContains(t, err, "org/big-GGUF: "+down.URL+" cannot be reached")
		require.ErrorContains(t, err, filepath.Join(cache, "hub", "org--big-GGUF", "main"))
		_, err = resolveBig(t, cache, srv.URL, true)
		require.ErrorIs(t, err, hub.ErrOffline)
		require.ErrorContains(t, err, "HF_HUB_OFFLINE is set")
		require.Empty(t, srv.Requests(), "offline makes no request")
	})

	t.Run("complete file", func(t *testing.T) {
		cache := t.TempDir()
		s, err := resolveBig(t, cache, srv.URL, false)
		require.NoError(t, err)
		got, err := readRange(t, s, [2]int64{0, int64(len(data))})
		require.NoError(t, err)
		require.Equal(t, data, got)
		require.NoFileExists(t, s.Path+".ranges", "a complete, checked file has no sidecar")
		for _, offline := range []bool{false, true} {
			endpoint := down.URL
			if offline {
				endpoint = srv.URL
			}
			srv.Reset()
			s, err := resolveBig(t, cache, endpoint, offline)
			require.NoError(t, err)
			got, err := readRange(t, s, b)
			require.NoError(t, err)
			require.Equal(t, data[b[0]:b[1]], got)
			require.Empty(t, srv.Requests())
		}
	})

	t.Run("partial file", func(t *testing.T) {
		cache := t.TempDir()
		s, err := resolveBig(t, cache, srv.URL, false)
		require.NoError(t, err)
		_, err = readRange(t, s, a)
		require.NoError(t, err)

		s, err = resolveBig(t, cache, down.URL, false)
		require.NoError(t, err, "the listing and the header are cached")
		got, err := readRange(t, s, a)
		require.NoError(t, err)
		require.Equal(t, data[a[0]:a[1]], got)
		_, err = readRange(t, s, b)
		require.ErrorIs(t, err, hub.ErrOffline)
		require.ErrorContains(t, err, "org/big-GGUF: big.gguf bytes")
		require.ErrorContains(t, err, "are not in the cache ("+s.Path+") and "+down.URL+" cannot be reached")
	})
}

// TestCompleteFileIsChecked: once every byte of a file is present its
// SHA-256 is checked against the listing's; a mismatch deletes it.
func TestCompleteFileIsChecked(t *testing.T) {
	srv := hubtest.New(t)
	data, a, _ := bigGGUF(t, srv)
	s, err := resolveBig(t, t.TempDir(), srv.URL, false)
	require.NoError(t, err)
	_, err = readRange(t, s, a)
	require.NoError(t, err)
	// Damage a byte already downloaded, as a disk error would.
	f, err := os.OpenFile(s.Path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{data[a[0]] ^ 0xff}, a[0])
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, err = readRange(t, s, [2]int64{0, int64(len(data))})
	require.ErrorIs(t, err, hub.ErrChecksum)
	require.ErrorContains(t, err, "org/big-GGUF: big.gguf: sha256 ")
	require.NoFileExists(t, s.Path)
	require.NoFileExists(t, s.Path+".ranges")
}

// TestChangedUpstreamFileIsDownloadedAgain: when the branch moves and a
// cached file's hash changes, the cached copy is dropped, even a complete
// one of the same size.
func TestChangedUpstreamFileIsDownloadedAgain(t *testing.T) {
	srv := hubtest.New(t)
	data, a, _ := bigGGUF(t, srv)
	cache := t.TempDir()
	s, err := resolveBig(t, cache, srv.URL, false)
	require.NoError(t, err)
	got, err := readRange(t, s, [2]int64{0, int64(len(data))})
	require.NoError(t, err)
	require.Equal(t, data, got)

	c := synth.DefaultConfig()
	c.Layers, c.Dim, c.FFN, c.Heads, c.KVHeads, c.Seed = 8, 128, 256, 4, 2, 99
	p := filepath.Join(t.TempDir(), "big.gguf")
	require.NoError(t, synth.WriteGGUF(p, c))
	next, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Len(t, next, len(data))
	require.NotEqual(t, data[a[0]:a[1]], next[a[0]:a[1]])
	srv.AddFile("org/big-GGUF", "big.gguf", next)

	s, err = resolveBig(t, cache, srv.URL, false)
	require.NoError(t, err)
	got, err = readRange(t, s, a)
	require.NoError(t, err)
	require.Equal(t, next[a[0]:a[1]], got)
}

// TestRetriesTransientFailures: a 503 without progress is retried
// Options.Retries times, then reported.
func TestRetriesTransientFailures(t *testing.T) {
	srv := hubtest.New(t)
	data, a, _ := bigGGUF(t, srv)
	opts := hub.Options{CacheDir: t.TempDir(), Endpoint: srv.URL, Retries: 2, RetryWait: time.Millisecond}
	s, err := hub.ResolveRepo(t.Context(), hub.RepoRef{Repo: "org/big-GGUF"}, opts)
	require.NoError(t, err)
	srv.Set(func(s *hubtest.Server) { s.FailNext = 2 })
	got, err := readRange(t, s, a)
	require.NoError(t, err)
	require.Equal(t, data[a[0]:a[1]], got)

	b := [2]int64{a[1], a[1] + 1000}
	srv.Set(func(s *hubtest.Server) { s.FailNext = 3 })
	_, err = readRange(t, s, b)
	require.ErrorIs(t, err, hub.ErrDownload)
	require.ErrorContains(t, err, "503 Service Unavailable")
}

// TestGatedRepoNeedsToken: HF_TOKEN is sent as a bearer token; without
// it a gated repository's 401 names HF_TOKEN.
func TestGatedRepoNeedsToken(t *testing.T) {
	srv := hubtest.New(t)
	data, a, _ := bigGGUF(t, srv)
	srv.Set(func(s *hubtest.Server) { s.Token = "hf_secret" })
	_, err := hub.ResolveRepo(t.Context(), hub.RepoRef{Repo: "org/big-GGUF"}, hub.Options{CacheDir: t.TempDir(), Endpoint: srv.URL})
	require.ErrorIs(t, err, hub.ErrDownload)
	require.ErrorContains(t, err, "401 Unauthorized (a gated or private repository needs HF_TOKEN)")
	s, err := hub.ResolveRepo(t.Context(), hub.RepoRef{Repo: "org/big-GGUF"}, hub.Options{CacheDir: t.TempDir(), Endpoint: srv.URL, Token: "hf_secret"})
	require.NoError(t, err)
	got, err := readRange(t, s, a)
	require.NoError(t, err)
	require.Equal(t, data[a[0]:a[1]], got)
}
