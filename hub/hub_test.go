package hub_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/hub"
	"github.com/swarmllm/swarm/internal/testenv"
)

// fakeHub is a local HTTP server with the hub's URL layout that serves the
// shared stories260K files, optionally altered, and counts requests.
type fakeHub struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

// newFakeHub serves files (URL path -> body) through handle, which may
// alter the response; nil handle serves the body as is.
func newFakeHub(t *testing.T, files map[string][]byte, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *fakeHub {
	t.Helper()
	h := &fakeHub{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.requests = append(h.requests, r.URL.Path)
		h.mu.Unlock()
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if handle != nil {
			handle(w, r, body)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *fakeHub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.requests)
}

// sharedFiles returns the URL paths of the stories260K files on the hub and
// their bytes from ../shared/models/stories260K.
func sharedFiles(t *testing.T) map[string][]byte {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(testenv.SharedFile(t, "models", "stories260K", name))
		require.NoError(t, err)
		return b
	}
	return map[string][]byte{
		"/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin": read("stories260K.bin"),
		"/karpathy/tinyllamas/resolve/main/stories260K/tok512.bin":      read("tok512.bin"),
	}
}

// dirEntries lists the names under dir (recursively), for leftover checks.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return names
}

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestFileURL(t *testing.T) {
	require.Equal(t, "https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin",
		hub.FileURL(hub.DefaultEndpoint, hub.Stories260K, hub.Stories260K.Weights))
	require.Equal(t, "http://mirror.local/x/karpathy/tinyllamas/resolve/main/stories260K/tok512.bin",
		hub.FileURL("http://mirror.local/x/", hub.Stories260K, hub.Stories260K.Tokenizer))
}

// TestStories260KSums checks the built-in sizes and sums against the shared
// copies documented in ../shared/models/stories260K/SOURCE.md.
func TestStories260KSums(t *testing.T) {
	for _, f := range []hub.File{hub.Stories260K.Weights, hub.Stories260K.Tokenizer} {
		path := testenv.SharedFile(t, "models", "stories260K", filepath.Base(f.Path))
		st, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, f.Size, st.Size(), path)
		require.Equal(t, f.SHA256, sha(t, path), path)
	}
}

func TestResolveDownloadsOnceThenUsesCache(t *testing.T) {
	srv := newFakeHub(t, sharedFiles(t), nil)
	cache := t.TempDir()
	var progress bytes.Buffer
	opts := hub.Options{CacheDir: cache, Endpoint: srv.URL, Progress: &progress}

	p, err := hub.Resolve(t.Context(), hub.Stories260K, opts)
	require.NoError(t, err)
	require.Equal(t, hub.FromDownload, p.Source)
	require.Equal(t, filepath.Join(cache, "stories260K", "stories260K.bin"), p.Model)
	require.Equal(t, filepath.Join(cache, "stories260K", "tok512.bin"), p.Tokenizer)
	require.Equal(t, hub.Stories260K.Weights.SHA256, sha(t, p.Model))
	require.Equal(t, hub.Stories260K.Tokenizer.SHA256, sha(t, p.Tokenizer))
	require.Equal(t, 2, srv.count())
	require.ElementsMatch(t, []string{"stories260K/stories260K.bin", "stories260K/tok512.bin"}, dirEntries(t, cache),
		"no temporary file is left behind")
	require.Contains(t, progress.String(), "downloading stories260K.bin")
	st, err := os.Stat(p.Model)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())

	again, err := hub.Resolve(t.Context(), hub.Stories260K, hub.Options{CacheDir: cache, Endpoint: srv.URL})
	require.NoError(t, err)
	require.Equal(t, hub.FromCache, again.Source)
	require.Equal(t, p.Model, again.Model)
	require.Equal(t, 2, srv.count(), "the second call makes no request")
}

func TestResolveRedownloadsWrongSizeCacheFile(t *testing.T) {
	srv := newFakeHub(t, sharedFiles(t), nil)
	cache := t.TempDir()
	dir := filepath.Join(cache, "stories260K")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stories260K.bin"), []byte("truncated"), 0o644))

	p, err := hub.Resolve(t.Context(), hub.Stories260K, hub.Options{CacheDir: cache, Endpoint: srv.URL})
	require.NoError(t, err)
	require.Equal(t, hub.FromDownload, p.Source)
	require.Equal(t, hub.Stories260K.Weights.SHA256, sha(t, p.Model))
}

func TestResolveRejectsBadBodies(t *testing.T) {
	tests := []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request, body []byte)
		want   []error
		text   string
	}{
		{"corrupted byte", func(w http.ResponseWriter, _ *http.Request, body []byte) {
			bad := bytes.Clone(body)
			bad[len(bad)/2] ^= 0x01
			w.Write(bad)
		}, []error{hub.ErrChecksum}, "sha256 "},
		{"short body", func(w http.ResponseWriter, _ *http.Request, body []byte) {
			w.Write(body[:len(body)-1]) // chunked: no Content-Length to catch it early
		}, []error{hub.ErrChecksum}, "the body is 1056539 bytes, want 1056540"},
		{"long body", func(w http.ResponseWriter, _ *http.Request, body []byte) {
			w.Write(append(bytes.Clone(body), 0))
		}, []error{hub.ErrChecksum}, "the body is longer than 1056540 bytes"},
		{"wrong content length", func(w http.ResponseWriter, _ *http.Request, body []byte) {
			w.Header().Set("Content-Length", "10")
			w.Write(body[:10])
		}, []error{hub.ErrChecksum}, "the server announces 10 bytes, want 1056540"},
		{"server error", func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}, []error{hub.ErrDownload}, "503 Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeHub(t, sharedFiles(t), tt.handle)
			cache := t.TempDir()
			_, err := hub.Resolve(t.Context(), hub.Stories260K, hub.Options{CacheDir: cache, Endpoint: srv.URL})
			for _, want := range tt.want {
				require.ErrorIs(t, err, want)
			}
			require.ErrorContains(t, err, tt.text)
			require.ErrorContains(t, err, srv.URL+"/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin", "the error names the URL")
			require.Empty(t, dirEntries(t, cache), "nothing is kept, not even a temporary file")
		})
	}
}

func TestResolveNotFound(t *testing.T) {
	srv := newFakeHub(t, map[string][]byte{}, nil)
	_, err := hub.Resolve(t.Context(), hub.Stories260K, hub.Options{CacheDir: t.TempDir(), Endpoint: srv.URL})
	require.ErrorIs(t, err, hub.ErrDownload)
	require.ErrorContains(t, err, "GET "+srv.URL+"/karpathy/tinyllamas/resolve/main/stories260K/stories260K.bin: 404 Not Found")
}

func TestResolveModelsDirNeedsNoNetwork(t *testing.T) {
	srv := newFakeHub(t, sharedFiles(t), nil)
	models := filepath.Dir(testenv.SharedFile(t, "models", "stories260K"))
	cache := t.TempDir()
	p, err := hub.Resolve(t.Context(), hub.Stories260K, hub.Options{ModelsDir: models, CacheDir: cache, Endpoint: srv.URL})
	require.NoError(t, err)
	require.Equal(t, hub.Paths{
		Model:     filepath.Join(models, "stories260K", "stories260K.bin"),
		Tokenizer: filepath.Join(models, "stories260K", "tok512.bin"),
		Source:    hub.FromModelsDir,
	}, p)
	require.Zero(t, srv.count(), "no request")
	require.Empty(t, dirEntries(t, cache))

	// A models dir without the model falls back to the cache and the hub.
	p, err = hub.Resolve(t.Context(), hub.Stories260K, hub.Options{ModelsDir: t.TempDir(), CacheDir: cache, Endpoint: srv.URL})
	require.NoError(t, err)
	require.Equal(t, hub.FromDownload, p.Source)

	// A wrong-size file there is an error, not a silent download.
	bad := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(bad, "stories260K"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "stories260K", "stories260K.bin"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "stories260K", "tok512.bin"), []byte("y"), 0o644))
	_, err = hub.Resolve(t.Context(), hub.Stories260K, hub.Options{ModelsDir: bad, CacheDir: cache, Endpoint: srv.URL})
	require.ErrorIs(t, err, hub.ErrChecksum)
	require.ErrorContains(t, err, "stories260K.bin is 1 bytes, want 1056540")
}

func TestResolveCancelMidDownload(t *testing.T) {
	started := make(chan struct{})
	srv := newFakeHub(t, sharedFiles(t), func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done() // hold the rest until the client goes away
	})
	cache := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := hub.Resolve(ctx, hub.Stories260K, hub.Options{CacheDir: cache, Endpoint: srv.URL})
		errc <- err
	}()
	<-started
	cancel()
	err := <-errc
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, hub.ErrDownload)
	require.Empty(t, dirEntries(t, cache), "a cancelled download leaves nothing")

	_, err = hub.Resolve(ctx, hub.Stories260K, hub.Options{CacheDir: cache, Endpoint: srv.URL})
	require.ErrorIs(t, err, context.Canceled, "an already-cancelled context makes no request")
}

func TestResolveBadEndpoint(t *testing.T) {
	for _, endpoint := range []string{"ftp://example.org", "huggingface.co", "http://"} {
		_, err := hub.Resolve(t.Context(), hub.Stories260K, hub.Options{CacheDir: t.TempDir(), Endpoint: endpoint})
		require.ErrorIs(t, err, hub.ErrBadOptions, endpoint)
		require.ErrorContains(t, err, strconv.Quote(endpoint))
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{"SWARM_MODELS": "/models", "HF_ENDPOINT": "http://mirror.local"}
	notTTY, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer notTTY.Close()
	opts := hub.OptionsFromEnv(func(k string) string { return env[k] }, notTTY)
	require.Equal(t, hub.Options{ModelsDir: "/models", Endpoint: "http://mirror.local", Retries: 3, RetryWait: time.Second}, opts,
		"a regular file is not a terminal: no progress bar")

	env["HF_TOKEN"], env["HF_HUB_OFFLINE"] = "hf_x", "1"
	opts = hub.OptionsFromEnv(func(k string) string { return env[k] }, notTTY)
	require.Equal(t, "hf_x", opts.Token)
	require.True(t, opts.Offline)

	// Without $SWARM_MODELS, ../shared/models is used when it exists
	// relative to the working directory.
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "shared", "models"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "repo"), 0o755))
	t.Chdir(filepath.Join(dir, "repo"))
	opts = hub.OptionsFromEnv(func(string) string { return "" }, nil)
	require.Equal(t, filepath.Join("..", "shared", "models"), opts.ModelsDir)
	t.Chdir(dir)
	opts = hub.OptionsFromEnv(func(string) string { return "" }, nil)
	require.Empty(t, opts.ModelsDir)
}
