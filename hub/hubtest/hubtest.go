// Package hubtest is a local HTTP server laid out like the Hugging Face
// hub, for tests: it answers model info (GET
// /api/models/{repo}/revision/{revision}, whose "sha" is Commit), lists
// repositories (GET /api/models/{repo}/tree/{revision}, paged with a Link
// header as the hub pages), serves files at /{repo}/resolve/{revision}/{path} (small files
// directly with ETag and X-Repo-Commit; LFS files, here .gguf and
// .safetensors, by a 302 redirect to /cdn/{sha256} carrying X-Linked-Etag
// and X-Linked-Size, as the hub redirects to its CDN), supports Range
// requests through http.ServeContent, and records every byte range it
// sends so tests can check what a client downloaded.
//
// Only tests may import it. It must never import other packages of this
// repository.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Commit is the X-Repo-Commit every response carries.
const Commit = "0123456789abcdef0123456789abcdef01234567"

// Range is a byte range [Start, End) of one file that the server sent.
type Range struct {
	Path       string // the file's path in its repository
	Start, End int64
}

// file is one file of a repository.
type file struct {
	path string // in the repository, slash-separated
	data []byte
	sha  string // sha256, for LFS files
	blob string // git blob id
	lfs  bool
}

// Server is the fake hub. Set its fields through Set while it serves.
type Server struct {
	*httptest.Server
	// PageSize is the most entries a listing page holds (default 1000).
	PageSize int
	// CutAfter, if > 0, makes the next weights (CDN) response send only
	// this many body bytes and then break the connection; it is reset to 0
	// once used.
	CutAfter int64
	// FailNext, while > 0, makes weights (CDN) requests answer 503 Service
	// Unavailable, counting down; a request that CutAfter cuts does not
	// count.
	FailNext int
	// Token, if not empty, makes the API and resolve endpoints answer 401
	// Unauthorized to requests without "Authorization: Bearer <Token>", as
	// for a gated repository (the CDN URLs need none, as signed URLs).
	Token string

	mu    sync.Mutex // guards the fields below and CutAfter
	repos map[string][]file
	sent  []Range
	reqs  []string
}

// New starts a server; Close is registered with t.Cleanup.
func New(t testing.TB) *Server {
	s := &Server{PageSize: 1000, repos: map[string][]file{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// AddDir publishes every regular file under dir (recursively) as
// repository repo ("org/name").
func (s *Server) AddDir(t testing.TB, repo, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		s.AddFile(repo, filepath.ToSlash(rel), data)
		return nil
	})
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
}

// AddFile publishes data as path in repo, replacing the file of that path
// if there is one (a new commit on the branch).
func (s *Server) AddFile(repo, path string, data []byte) {
	sum := sha256.Sum256(data)
	blob := sha1.New()
	fmt.Fprintf(blob, "blob %d\x00", len(data))
	blob.Write(data)
	f := file{path: path, data: data, sha: hex.EncodeToString(sum[:]), blob: hex.EncodeToString(blob.Sum(nil)),
		lfs: strings.HasSuffix(path, ".gguf") || strings.HasSuffix(path, ".safetensors")}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[repo] = slices.DeleteFunc(s.repos[repo], func(g file) bool { return g.path == path })
	s.repos[repo] = append(s.repos[repo], f)
	slices.SortFunc(s.repos[repo], func(a, b file) int { return strings.Compare(a.path, b.path) })
}

// Set runs f with the server's fields locked (CutAfter, FailNext,
// PageSize, Token).
func (s *Server) Set(f func(s *Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// Sent returns the byte ranges sent so far of repo files, in order.
func (s *Server) Sent() []Range {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// Requests returns the request paths (with query) so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Reset forgets the ranges and requests recorded.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent, s.reqs = nil, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r.URL.RequestURI())
	s.mu.Unlock()
	w.Header().Set("X-Repo-Commit", Commit)
	p := r.URL.Path
	s.mu.Lock()
	token := s.Token
	s.mu.Unlock()
	if token != "" && !strings.HasPrefix(p, "/cdn/") && r.Header.Get("Authorization") != "Bearer "+token {
		w.Header().Set("X-Error-Code", "GatedRepo")
		http.Error(w, `{"error":"Access to this model is restricted"}`, http.StatusUnauthorized)
		return
	}
	switch {
	case strings.HasPrefix(p, "/api/models/"):
		s.list(w, r, strings.TrimPrefix(p, "/api/models/"))
	case strings.HasPrefix(p, "/cdn/"):
		s.cdn(w, r, strings.TrimPrefix(p, "/cdn/"))
	default:
		s.resolve(w, r, strings.TrimPrefix(p, "/"))
	}
}

// lookup finds repo's file; the revision must be "main" or Commit.
func (s *Server) lookup(repo, rev, path string) (file, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev != "main" && rev != Commit {
		return file{}, false
	}
	for _, f := range s.repos[repo] {
		if f.path == path {
			return f, true
		}
	}
	return file{}, false
}

// list answers {repo}/tree/{rev}, paged by PageSize with ?cursor=N.
func (s *Server) list(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 4) // org, name, "tree" or "revision", rev
	if len(parts) != 4 || !(parts[2] == "tree" && r.URL.Query().Get("recursive") == "true" || parts[2] == "revision") {
		http.Error(w, `{"error":"bad listing request"}`, http.StatusBadRequest)
		return
	}
	repo, rev := parts[0]+"/"+parts[1], parts[3]
	if parts[2] == "revision" {
		s.mu.Lock()
		_, ok := s.repos[repo]
		s.mu.Unlock()
		if !ok || (rev != "main" && rev != Commit) {
			http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": repo, "modelId": repo, "sha": Commit})
		return
	}
	s.mu.Lock()
	files, ok := s.repos[repo]
	page := s.PageSize
	s.mu.Unlock()
	if !ok || (rev != "main" && rev != Commit) {
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return
	}
	type lfs struct {
		OID         string `json:"oid"`
		Size        int64  `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type entry struct {
		Type string `json:"type"`
		OID  string `json:"oid"`
		Size int64  `json:"size"`
		Path string `json:"path"`
		LFS  *lfs   `json:"lfs,omitempty"`
	}
	var entries []entry
	dirs := map[string]bool{}
	for _, f := range files {
		if d, _, ok := strings.Cut(f.path, "/"); ok && !dirs[d] {
			dirs[d] = true
			entries = append(entries, entry{Type: "directory", OID: strings.Repeat("d", 40), Path: d})
		}
		e := entry{Type: "file", OID: f.blob, Size: int64(len(f.data)), Path: f.path}
		if f.lfs {
			e.LFS = &lfs{OID: f.sha, Size: int64(len(f.data)), PointerSize: 134}
		}
		entries = append(entries, e)
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := min(len(entries), start+page)
	if end < len(entries) {
		next := *r.URL
		q := next.Query()
		q.Set("cursor", strconv.Itoa(end))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, next.RequestURI()))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(entries[start:end])
}

// resolve answers {repo}/resolve/{rev}/{path}.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 5) // org, name, "resolve", rev, path
	if len(parts) != 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	f, ok := s.lookup(parts[0]+"/"+parts[1], parts[3], parts[4])
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.NotFound(w, r)
		return
	}
	if f.lfs {
		w.Header().Set("X-Linked-Etag", strconv.Quote(f.sha))
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.data)))
		w.Header().Set("ETag", strconv.Quote(f.sha))
		http.Redirect(w, r, "/cdn/"+f.sha, http.StatusFound)
		return
	}
	w.Header().Set("ETag", strconv.Quote(f.blob))
	s.content(w, r, f)
}

// cdn serves an LFS file by its sha256.
func (s *Server) cdn(w http.ResponseWriter, r *http.Request, sha string) {
	s.mu.Lock()
	var f file
	found := false
	for _, fs := range s.repos {
		for _, x := range fs {
			if x.lfs && x.sha == sha {
				f, found = x, true
			}
		}
	}
	cut := s.CutAfter
	s.CutAfter = 0
	fail := cut == 0 && s.FailNext > 0 // a cut response comes first
	if fail {
		s.FailNext--
	}
	s.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	if fail {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("ETag", strconv.Quote(f.sha))
	if cut > 0 {
		w = &cutWriter{ResponseWriter: w, left: cut}
	}
	s.content(w, r, f)
}

// content serves f with Range support, recording the bytes sent.
func (s *Server) content(w http.ResponseWriter, r *http.Request, f file) {
	w.Header().Set("Content-Type", "application/octet-stream")
	rec := &recorder{ResponseWriter: w, s: s, path: f.path, off: -1}
	http.ServeContent(rec, r, "", time.Time{}, strings.NewReader(string(f.data)))
}

// recorder records the body bytes written, at their file offsets (from
// Content-Range on a 206, else from 0).
type recorder struct {
	http.ResponseWriter
	s    *Server
	path string
	off  int64
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.off < 0 {
		rec.off = 0
		if cr := rec.Header().Get("Content-Range"); cr != "" {
			var a, z, size int64
			fmt.Sscanf(cr, "bytes %d-%d/%d", &a, &z, &size)
			rec.off = a
		}
	}
	n, err := rec.ResponseWriter.Write(b)
	if n > 0 {
		rec.s.mu.Lock()
		rec.s.sent = append(rec.s.sent, Range{Path: rec.path, Start: rec.off, End: rec.off + int64(n)})
		rec.s.mu.Unlock()
		rec.off += int64(n)
	}
	return n, err
}

// cutWriter sends left body bytes, then fails every write: the response
// ends short of its Content-Length and net/http closes the connection, as
// a transfer broken by the network does.
type cutWriter struct {
	http.ResponseWriter
	left int64
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > c.left {
		n, _ := c.ResponseWriter.Write(b[:c.left])
		c.left -= int64(n)
		return n, errors.New("hubtest: transfer cut")
	}
	c.left -= int64(len(b))
	return c.ResponseWriter.Write(b)
}
