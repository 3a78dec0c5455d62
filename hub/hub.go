package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrChecksum: a file's size or SHA-256 differs from the expected one.
	ErrChecksum = errors.New("hub: checksum mismatch")
	// ErrDownload: the HTTP request failed or answered something other
	// than 200 OK; the message names the URL.
	ErrDownload = errors.New("hub: download failed")
	// ErrBadOptions: an option is invalid (e.g. an endpoint that is not an
	// http(s) URL).
	ErrBadOptions = errors.New("hub: bad options")
)

// DefaultEndpoint is the Hugging Face hub.
const DefaultEndpoint = "https://huggingface.co"

// File is one file of a model repository on the hub.
type File struct {
	// Path is the file's path inside the repository, slash-separated, e.g.
	// "stories260K/stories260K.bin". Locally the file is stored under its
	// base name.
	Path string
	// Size is the file's length in bytes.
	Size int64
	// SHA256 is the file's SHA-256, lower-case hex; "" when unknown (a
	// file the hub stores in git rather than LFS).
	SHA256 string
	// BlobID is the file's git blob id (the SHA-1 of "blob <size>\x00"
	// and its content, lower-case hex), checked when SHA256 is empty and
	// this is not; "" when unknown.
	BlobID string
}

// Model is a model whose files Resolve can fetch: a weights file and a
// tokenizer file.
type Model struct {
	// Name is the local directory name, under ModelsDir and CacheDir.
	Name string
	// Repo is the hub repository, "owner/name".
	Repo string
	// Revision is the branch, tag or commit to download ("main").
	Revision string
	// Weights is the model file (llama2.c .bin for stories260K).
	Weights File
	// Tokenizer is the tokenizer file (llama2.c tok512.bin for stories260K).
	Tokenizer File
}

// Stories260K is Karpathy's 260K-parameter TinyStories Llama-2 model
// (repo karpathy/tinyllamas, folder stories260K), the default model of the
// demo. Sizes and SHA-256 sums are those of ../shared/models/stories260K
// (its SOURCE.md), whose copies reproduce the reference outputs.
var Stories260K = Model{
	Name:     "stories260K",
	Repo:     "karpathy/tinyllamas",
	Revision: "main",
	Weights: File{
		Path:   "stories260K/stories260K.bin",
		Size:   1056540,
		SHA256: "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696",
	},
	Tokenizer: File{
		Path:   "stories260K/tok512.bin",
		Size:   6227,
		SHA256: "037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312",
	},
}

// Options says where Resolve looks and how it downloads. The zero value
// skips the models directory, caches under os.UserCacheDir()/swarm/models,
// downloads from DefaultEndpoint with http.DefaultClient and shows no
// progress bar.
type Options struct {
	// ModelsDir, if not empty, is searched first: a model is found there when
	// both files exist as ModelsDir/<Model.Name>/<base name of File.Path>.
	// Such files are trusted as they are, but a size other than File.Size
	// is an error (ErrChecksum).
	ModelsDir string
	// CacheDir is where downloads go, as CacheDir/<Model.Name>/<base name>;
	// empty means os.UserCacheDir()/swarm/models.
	CacheDir string
	// Endpoint is the hub's base URL; empty means DefaultEndpoint.
	Endpoint string
	// Progress, if not nil, receives a progress bar per download (meant for
	// a terminal's stderr).
	Progress io.Writer
	// HTTPClient makes the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Token, if not empty, is sent as "Authorization: Bearer <Token>" to
	// the endpoint (HF_TOKEN: gated and private repositories).
	Token string
	// Offline makes ResolveRepo use only what the cache holds, without any
	// request (HF_HUB_OFFLINE=1).
	Offline bool
	// Retries is how many times ResolveRepo's range downloads retry a
	// transient failure that made no progress (no answer, 5xx, 429); 0
	// means none. A transfer broken after some bytes always goes on.
	Retries int
	// RetryWait is the wait before the first retry; the n-th waits n times
	// as long.
	RetryWait time.Duration
}

// Source says where Resolve found a model.
type Source string

// The places a model can come from.
const (
	FromModelsDir Source = "models-dir" // Options.ModelsDir
	FromCache     Source = "cache"      // downloaded earlier into Options.CacheDir
	FromDownload  Source = "download"   // downloaded by this call (at least one file)
)

// Paths are the local files of a resolved model.
type Paths struct {
	// Model is the weights file.
	Model string
	// Tokenizer is the tokenizer file.
	Tokenizer string
	// Source says where they were found.
	Source Source
}

// Resolve returns the local paths of m's weights and tokenizer: from
// opts.ModelsDir when both files are there, else from the cache, else
// downloaded into the cache. A download is written to a temporary file in
// the cache directory and renamed to its final name only after its size
// and SHA-256 match, so a failed or cancelled download leaves nothing under
// the final name. Cached files are not hashed again (they were checked
// before the rename); one with the wrong size is downloaded again.
//
// Errors wrap ErrDownload (HTTP failure or status, naming the URL),
// ErrChecksum (wrong size or SHA-256; nothing is kept), ErrBadOptions,
// ctx.Err() when ctx ends first, or the file system's error.
func Resolve(ctx context.Context, m Model, opts Options) (Paths, error) {
	if opts.ModelsDir != "" {
		p, found, err := lookInModelsDir(m, opts.ModelsDir)
		if err != nil || found {
			return p, err
		}
	}
	cacheDir, err := cacheRoot(opts.CacheDir)
	if err != nil {
		return Paths{}, err
	}
	endpoint, err := checkEndpoint(opts.Endpoint)
	if err != nil {
		return Paths{}, err
	}
	d := newDownloader(opts)
	dir := filepath.Join(cacheDir, m.Name)
	p := Paths{Source: FromCache}
	for _, f := range []struct {
		file File
		dst  *string
	}{{m.Weights, &p.Model}, {m.Tokenizer, &p.Tokenizer}} {
		local := filepath.Join(dir, path.Base(f.file.Path))
		*f.dst = local
		if st, err := os.Stat(local); err == nil && st.Mode().IsRegular() && st.Size() == f.file.Size {
			continue
		}
		if err := d.fetch(ctx, FileURL(endpoint, m, f.file), f.file, local); err != nil {
			return Paths{}, err
		}
		p.Source = FromDownload
	}
	return p, nil
}

// checkEndpoint returns endpoint, or DefaultEndpoint when empty, after
// checking that it is an http(s) URL.
func checkEndpoint(endpoint string) (string, error) {
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: endpoint %q is not an http(s) URL like %s", ErrBadOptions, endpoint, DefaultEndpoint)
	}
	return strings.TrimRight(endpoint, "/"), nil
}

// newDownloader returns the downloader of opts.
func newDownloader(opts Options) downloader {
	d := downloader{client: opts.HTTPClient, progress: opts.Progress, token: opts.Token}
	if d.client == nil {
		d.client = http.DefaultClient
	}
	return d
}

// FileURL is the hub URL of f in m: {endpoint}/{repo}/resolve/{revision}/{path}.
func FileURL(endpoint string, m Model, f File) string {
	return strings.TrimRight(endpoint, "/") + "/" + m.Repo + "/resolve/" + m.Revision + "/" + f.Path
}

// lookInModelsDir reports whether both files of m are under dir/m.Name.
func lookInModelsDir(m Model, dir string) (Paths, bool, error) {
	p := Paths{
		Model:     filepath.Join(dir, m.Name, path.Base(m.Weights.Path)),
		Tokenizer: filepath.Join(dir, m.Name, path.Base(m.Tokenizer.Path)),
		Source:    FromModelsDir,
	}
	for _, f := range []struct {
		local string
		file  File
	}{{p.Model, m.Weights}, {p.Tokenizer, m.Tokenizer}} {
		st, err := os.Stat(f.local)
		if errors.Is(err, os.ErrNotExist) {
			return Paths{}, false, nil
		}
		if err != nil {
			return Paths{}, false, fmt.Errorf("hub: models dir: %w", err)
		}
		if st.Size() != f.file.Size {
			return Paths{}, false, fmt.Errorf("%w: %s is %d bytes, want %d (%s of %s)",
				ErrChecksum, f.local, st.Size(), f.file.Size, f.file.Path, m.Repo)
		}
	}
	return p, true, nil
}

// cacheRoot returns dir, or os.UserCacheDir()/swarm/models when empty.
func cacheRoot(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w: no cache directory given and none found: %w", ErrBadOptions, err)
	}
	return filepath.Join(base, "swarm", "models"), nil
}
