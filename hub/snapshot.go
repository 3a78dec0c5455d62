package hub

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"
)

// Snapshot is a repository model made local for reading: its small files
// downloaded whole and its weights files present as sparse files whose
// headers are downloaded and whose tensors are downloaded by range when
// read through Open. A Snapshot is safe for concurrent use.
type Snapshot struct {
	// Ref is the resolved reference (Revision filled in).
	Ref RepoRef
	// Layout is how the weights are stored.
	Layout Layout
	// Dir is the local directory mirroring the repository at Ref.Revision:
	// CacheDir/hub/ORG--REPO/REVISION.
	Dir string
	// Path is what blocks.Open takes: the .gguf file, or Dir for the
	// safetensors layout.
	Path string
	// Commit is the commit Ref.Revision pointed at when last listed; files
	// are downloaded from it.
	Commit string

	partials map[string]*partial // by cleaned local path
}

// listingFile, in a snapshot directory, holds the repository's file list
// as last fetched, so that a cached model resolves offline.
const listingFile = ".listing.json"

// ggufProbe is the first prefix of a GGUF file downloaded to parse its
// header; the prefix doubles until gguf-parser-go parses a header that
// ends inside it. At most max(ggufProbe, header size) bytes past the
// header's end (the first tensors' data) are downloaded this way.
const ggufProbe = 256 << 10

// ResolveRepo makes ref's model readable locally under opts.CacheDir: it
// pins the revision to its commit (GET
// {endpoint}/api/models/{repo}/revision/{revision}), lists the repository
// at that commit (GET .../tree/{commit}), downloads files from that commit,
// picks the model (see RepoRef.File), downloads config and tokenizer files
// whole (size and SHA-256 or git blob id checked) and, for each weights
// file, only its header (GGUF: a growing prefix until gguf-parser-go
// parses it; safetensors: the 8-byte length and the JSON header). Tensors
// are downloaded when read through Snapshot.Open, so a server downloads
// its span's tensors and a client the embeddings and LM head only.
//
// A file whose every byte has been downloaded is checked against its
// SHA-256 then (a partial file cannot be: sizes and Content-Range are
// checked on every request instead). Offline (opts.Offline, or the
// endpoint unreachable), a model whose listing and needed bytes are cached
// still resolves; otherwise errors wrap ErrOffline and name the
// repository, the endpoint and the cache directory.
//
// ctx also bounds the downloads made later by reads through Open.
func ResolveRepo(ctx context.Context, ref RepoRef, opts Options) (*Snapshot, error) {
	if ref.Revision == "" {
		ref.Revision = "main"
	}
	root, err := cacheRoot(opts.CacheDir)
	if err != nil {
		return nil, err
	}
	endpoint, err := checkEndpoint(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	d := newDownloader(opts)
	dir := filepath.Join(root, "hub", strings.ReplaceAll(ref.Repo, "/", "--"), url.PathEscape(ref.Revision))
	list, offline, err := listCached(ctx, d, endpoint, ref, dir, opts.Offline)
	if err != nil {
		return nil, err
	}
	files := list.Files
	m, err := pickModel(ref, files)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Ref: ref, Layout: m.Layout, Dir: dir, Path: dir, Commit: list.Commit, partials: map[string]*partial{}}
	for _, f := range m.Small {
		if err := s.fetchSmall(ctx, d, endpoint, f, offline); err != nil {
			return nil, err
		}
	}
	weights := m.Weights
	if m.Index != nil {
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m.Index.Path)))
		if err != nil {
			return nil, fmt.Errorf("hub: %w", err)
		}
		if weights, err = shardsOf(ref, raw, files); err != nil {
			return nil, err
		}
	}
	for _, f := range weights {
		local := filepath.Join(dir, filepath.FromSlash(f.Path))
		p, err := openPartial(ctx, d, local, s.fileURL(endpoint, f.Path), ref.Repo, endpoint, f, offline)
		if err != nil {
			return nil, err
		}
		p.retry.n, p.retry.wait = opts.Retries, opts.RetryWait
		if !p.complete {
			if m.Layout == LayoutGGUF {
				err = p.probeGGUF()
			} else {
				err = p.readSafetensorsHeader()
			}
			if err != nil {
				return nil, err
			}
		}
		s.partials[filepath.Clean(local)] = p
		if m.Layout == LayoutGGUF {
			s.Path = local
		}
	}
	return s, nil
}

// Open opens a file of the snapshot for reading by offset: a weights file
// downloads the bytes it lacks as they are read; any other path is opened
// with os.Open. Pass it to blocks.WithOpenFile.
func (s *Snapshot) Open(path string) (ReadAtFile, error) {
	if p, ok := s.partials[filepath.Clean(path)]; ok {
		return p.open()
	}
	return os.Open(path)
}

// fileURL is {endpoint}/{repo}/resolve/{commit}/{path}.
func (s *Snapshot) fileURL(endpoint, path string) string {
	return endpoint + "/" + s.Ref.Repo + "/resolve/" + url.PathEscape(s.Commit) + "/" + path
}

// listCached lists the repository and caches the listing in dir; offline
// or when the endpoint cannot be reached it returns the cached listing and
// why the endpoint is not used ("" when it is).
func listCached(ctx context.Context, d downloader, endpoint string, ref RepoRef, dir string, offline bool) (listing, string, error) {
	cached := filepath.Join(dir, listingFile)
	var reason error
	if !offline {
		list, err := d.listRepo(ctx, endpoint, ref)
		var u *unreachable
		switch {
		case err == nil:
			forgetChanged(dir, cached, list.Files)
			raw, err := json.Marshal(list)
			if err == nil {
				err = os.MkdirAll(dir, 0o755)
			}
			if err == nil {
				err = writeFileAtomic(cached, raw)
			}
			if err != nil {
				return listing{}, "", fmt.Errorf("hub: cache the listing of %s: %w", ref, err)
			}
			return list, "", nil
		case errors.As(err, &u):
			reason = err
		default:
			return listing{}, "", fmt.Errorf("hub: list %s at %s: %w", ref, endpoint, err)
		}
	}
	why := "HF_HUB_OFFLINE is set"
	if reason != nil {
		why = fmt.Sprintf("%s cannot be reached (%v)", endpoint, reason)
	}
	raw, err := os.ReadFile(cached)
	if err != nil {
		return listing{}, "", fmt.Errorf("%w: %s: %s and the cache (%s) holds no listing of it: download it once online, or set HF_ENDPOINT to a reachable mirror",
			ErrOffline, ref, why, dir)
	}
	var list listing
	if err := json.Unmarshal(raw, &list); err != nil || !commitHash.MatchString(list.Commit) {
		return listing{}, "", fmt.Errorf("hub: %s is not a listing (delete it to list again): %v", cached, err)
	}
	return list, why, nil
}

// forgetChanged deletes the cached copies (and sidecars) of files whose
// size or hash differs from the previous listing's: the revision (a
// branch) moved, and a complete file is otherwise trusted by its size.
func forgetChanged(dir, cached string, files []File) {
	raw, err := os.ReadFile(cached)
	if err != nil {
		return
	}
	var old listing
	if json.Unmarshal(raw, &old) != nil {
		return
	}
	now := map[string]File{}
	for _, f := range files {
		now[f.Path] = f
	}
	for _, f := range old.Files {
		if g, ok := now[f.Path]; !ok || g != f {
			local := filepath.Join(dir, filepath.FromSlash(f.Path))
			os.Remove(local)
			os.Remove(local + sidecarSuffix)
		}
	}
}

// fetchSmall downloads f whole into the snapshot unless the cache holds
// it at the right size.
func (s *Snapshot) fetchSmall(ctx context.Context, d downloader, endpoint string, f File, offline string) error {
	local := filepath.Join(s.Dir, filepath.FromSlash(f.Path))
	if st, err := os.Stat(local); err == nil && st.Mode().IsRegular() && st.Size() == f.Size {
		return nil
	}
	if offline != "" {
		return fmt.Errorf("%w: %s: %s is not in the cache (%s) and %s", ErrOffline, s.Ref, f.Path, s.Dir, offline)
	}
	return d.fetch(ctx, s.fileURL(endpoint, f.Path), f, local)
}

// parseGGUF runs gguf-parser-go, turning its panics on malformed input
// into errors.
func parseGGUF(path string) (gf *gguf.GGUFFile, err error) {
	defer func() {
		if r := recover(); r != nil {
			gf, err = nil, fmt.Errorf("malformed header: %v", r)
		}
	}()
	return gguf.ParseGGUFFile(path)
}

// probeGGUF downloads a prefix of the GGUF file until gguf-parser-go
// parses a header that ends inside the downloaded bytes (the rest of the
// sparse file reads as zeros, so a header parsed past the prefix is not
// trusted), and records the tensors' extents.
func (p *partial) probeGGUF() error {
	for prefix := min(p.file.Size, ggufProbe); ; prefix = min(p.file.Size, 2*prefix) {
		if err := p.ensure(0, prefix); err != nil {
			return err
		}
		gf, err := parseGGUF(p.local)
		if err == nil && gf.TensorDataStartOffset <= prefix {
			ext := make(extents, 0, len(gf.TensorInfos))
			for _, ti := range gf.TensorInfos {
				start := gf.TensorDataStartOffset + int64(ti.Offset)
				ext = append(ext, span{start, start + int64(ti.Bytes())})
			}
			p.setExtents(ext)
			return nil
		}
		if prefix == p.file.Size {
			if err == nil {
				err = fmt.Errorf("the header ends at byte %d, past the end", gf.TensorDataStartOffset)
			}
			return fmt.Errorf("%w: %s: %s is not a readable GGUF file: %w", ErrNoModel, p.repo, p.file.Path, err)
		}
	}
}

// safetensorsMaxHeader bounds a safetensors JSON header (the reference
// implementation refuses headers over 100 MB).
const safetensorsMaxHeader = 100 << 20

// readSafetensorsHeader downloads a safetensors file's header
// (https://github.com/huggingface/safetensors: an 8-byte little-endian
// length N, then N bytes of JSON whose entries' data_offsets are relative
// to the byte after the header) and records the tensors' extents.
func (p *partial) readSafetensorsHeader() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s is not a safetensors file: %s", ErrNoModel, p.repo, p.file.Path, fmt.Sprintf(format, a...))
	}
	if p.file.Size < 8 {
		return bad("%d bytes", p.file.Size)
	}
	h, err := p.open()
	if err != nil {
		return err
	}
	defer h.Close()
	var lenBuf [8]byte
	if _, err := h.ReadAt(lenBuf[:], 0); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > safetensorsMaxHeader || int64(n) > p.file.Size-8 {
		return bad("header length %d in a %d-byte file", n, p.file.Size)
	}
	raw := make([]byte, n)
	if _, err := h.ReadAt(raw, 8); err != nil {
		return err
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(raw, &header); err != nil {
		return bad("header: %v", err)
	}
	base := 8 + int64(n)
	ext := make(extents, 0, len(header))
	for name, v := range header {
		if name == "__metadata__" {
			continue
		}
		var t struct {
			DataOffsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &t); err != nil || len(t.DataOffsets) != 2 || t.DataOffsets[0] < 0 ||
			t.DataOffsets[1] < t.DataOffsets[0] || base+t.DataOffsets[1] > p.file.Size {
			return bad("tensor %s: bad data_offsets", name)
		}
		ext = append(ext, span{base + t.DataOffsets[0], base + t.DataOffsets[1]})
	}
	p.setExtents(ext)
	return nil
}

// setExtents records the tensors' byte ranges, sorted.
func (p *partial) setExtents(ext extents) {
	slices.SortFunc(ext, func(a, b span) int { return int(min(max(a.Start-b.Start, -1), 1)) })
	p.mu.Lock()
	p.ext = ext
	p.mu.Unlock()
}

// writeFileAtomic writes raw to path through a temporary file renamed
// over it.
func writeFileAtomic(path string, raw []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(raw)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
