package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// maxRequest is the most bytes one range request asks for: a longer miss
// is fetched in several requests, each recorded in the sidecar when done,
// so an interrupted transfer loses at most the unrecorded part of one.
const maxRequest = 64 << 20

// ReadAtFile is what Snapshot.Open returns: a file to read tensors from by
// offset (blocks.File has the same methods).
type ReadAtFile interface {
	io.ReaderAt
	io.Closer
	Stat() (fs.FileInfo, error)
}

// partial is one weights file of a snapshot, downloaded by range as it is
// read: a sparse local file of the full size, plus FILE.ranges listing the
// bytes it holds. One partial is shared by every handle of the file in this
// process. Another process using the same cache merges its ranges into the
// sidecar when it writes it; two processes fetching the same missing bytes
// at once both download them (the bytes are the same).
type partial struct {
	local    string // the data file
	url      string // its resolve URL
	file     File
	repo     string // for messages
	endpoint string
	offline  string // why the endpoint is not used; "" when it is
	d        downloader
	retry    struct {
		n    int           // Options.Retries
		wait time.Duration // Options.RetryWait
	}
	// ctx bounds the requests made from ReadAt, which takes no context:
	// the context ResolveRepo was called with.
	ctx context.Context

	mu       sync.Mutex // guards the fields below
	present  rangeSet
	ext      extents // tensors' byte ranges, once the header is known
	complete bool    // all bytes present and checked; no sidecar
	bar      *progressbar.ProgressBar
}

// openPartial prepares f's local file: complete files are used as they
// are, partial ones resume from their sidecar, others start as a sparse
// file of f.Size bytes (the sidecar is written first, so a full-size file
// without one is always complete).
func openPartial(ctx context.Context, d downloader, local, url, repo, endpoint string, f File, offline string) (*partial, error) {
	p := &partial{local: local, url: url, file: f, repo: repo, endpoint: endpoint, offline: offline, d: d, ctx: ctx}
	side := local + sidecarSuffix
	sc, err := readSidecar(side)
	if err != nil {
		return nil, err
	}
	st, statErr := os.Stat(local)
	switch {
	case sc == nil && statErr == nil && st.Mode().IsRegular() && st.Size() == f.Size:
		p.complete = true
		return p, nil
	case sc != nil && sc.Size == f.Size && sc.SHA256 == f.SHA256 && statErr == nil && st.Size() == f.Size:
		p.present = sc.present()
		return p, nil
	}
	if offline != "" {
		return nil, fmt.Errorf("%w: %s: %s is not in the cache (%s) and %s", ErrOffline, repo, f.Path, local, offline)
	}
	// Start afresh: a stale sidecar names another version of the file.
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return nil, fmt.Errorf("hub: cache directory: %w", err)
	}
	if err := writeSidecar(side, f.Size, f.SHA256, nil); err != nil {
		return nil, err
	}
	data, err := os.OpenFile(local, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	err = data.Truncate(f.Size) // sparse: no disk space until written
	if cerr := data.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	return p, nil
}

// ensure makes bytes [start, end) present, widened to whole tensors when
// the header is known. It is safe for concurrent use.
func (p *partial) ensure(start, end int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.complete || p.present.covers(start, end) {
		return nil
	}
	start, end = p.ext.widen(start, end)
	end = min(end, p.file.Size)
	for _, gap := range p.present.missing(start, end) {
		for off := gap.Start; off < gap.End; {
			n, err := p.fetchLocked(off, min(gap.End, off+maxRequest))
			off += n
			if err != nil {
				return err
			}
		}
	}
	if p.present.covers(0, p.file.Size) {
		return p.finishLocked()
	}
	return nil
}

// fetchLocked downloads [start, end) into the local file and records what
// arrived. A broken transfer that made progress goes on at once from where
// it stopped; a transient failure without progress (no answer, 5xx, 429)
// is retried up to Options.Retries times, waiting RetryWait, then twice
// that, and so on. It returns the bytes recorded.
func (p *partial) fetchLocked(start, end int64) (int64, error) {
	if p.offline != "" {
		return 0, fmt.Errorf("%w: %s: %s bytes %d..%d are not in the cache (%s) and %s",
			ErrOffline, p.repo, p.file.Path, start, end, p.local, p.offline)
	}
	data, err := os.OpenFile(p.local, os.O_WRONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("hub: %w", err)
	}
	defer data.Close()
	var done int64
	failures := 0
	for {
		n, err := p.d.fetchRange(p.ctx, p.url, p.file.Size, start+done, end, data, p.progressLocked())
		if n > 0 {
			if rerr := p.recordLocked(data, start+done, start+done+n); rerr != nil {
				return done, rerr
			}
			done += n
		}
		if err == nil {
			return done, nil
		}
		if p.ctx.Err() != nil {
			return done, err
		}
		if n > 0 { // a broken transfer that made progress: go on at once
			failures = 0
			continue
		}
		if failures < p.retry.n && transient(err) {
			failures++
			select {
			case <-time.After(time.Duration(failures) * p.retry.wait):
				continue
			case <-p.ctx.Done():
				return done, fmt.Errorf("%w (waiting to retry after: %w)", p.ctx.Err(), err)
			}
		}
		var u *unreachable
		if errors.As(err, &u) && done == 0 {
			return done, fmt.Errorf("%w: %s: %s bytes %d..%d are not in the cache (%s) and %s cannot be reached: %w",
				ErrOffline, p.repo, p.file.Path, start, end, p.local, p.endpoint, err)
		}
		return done, err
	}
}

// recordLocked syncs the data written so far and adds [start, end) to the
// sidecar, merged with what another process may have recorded there.
func (p *partial) recordLocked(data *os.File, start, end int64) error {
	if err := data.Sync(); err != nil {
		return fmt.Errorf("hub: write %s: %w", p.local, err)
	}
	p.present = p.present.add(start, end)
	side := p.local + sidecarSuffix
	if sc, err := readSidecar(side); err == nil && sc != nil && sc.Size == p.file.Size && sc.SHA256 == p.file.SHA256 {
		p.present = p.present.union(sc.present())
	}
	return writeSidecar(side, p.file.Size, p.file.SHA256, p.present)
}

// finishLocked checks a file whose every byte is present against its
// SHA-256 (when known) and removes its sidecar; a mismatch deletes both.
// Only a complete file can be checked: a partial one is trusted range by
// range (sizes and Content-Range are always checked).
func (p *partial) finishLocked() error {
	if p.file.SHA256 != "" {
		f, err := os.Open(p.local)
		if err != nil {
			return fmt.Errorf("hub: %w", err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("hub: %w", err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != p.file.SHA256 {
			os.Remove(p.local + sidecarSuffix)
			os.Remove(p.local)
			p.present = nil
			return fmt.Errorf("%w: %s: %s: sha256 %s, want %s (the file was deleted)", ErrChecksum, p.repo, p.file.Path, got, p.file.SHA256)
		}
	}
	if err := os.Remove(p.local + sidecarSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hub: %w", err)
	}
	p.complete = true
	return nil
}

// progressLocked returns the file's progress bar (its total is the file
// size; it starts at the bytes already present), or nil.
func (p *partial) progressLocked() io.Writer {
	if p.d.progress == nil {
		return nil
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions64(p.file.Size,
			progressbar.OptionSetWriter(p.d.progress),
			progressbar.OptionSetDescription("fetching "+filepath.Base(p.local)+" (needed ranges)"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.d.progress) }),
		)
		p.bar.Set64(p.present.bytes())
	}
	return p.bar
}

// fetchRange GETs bytes [start, end) of a size-byte file at url and writes
// them at the same offsets of dst, reporting each write to progress (may
// be nil). It returns the bytes written, also on error. The response must
// be 206 with a Content-Range of exactly those bytes of a size-byte file
// (or 200 with the whole file when that is what was asked).
func (d downloader) fetchRange(ctx context.Context, url string, size, start, end int64, dst io.WriterAt, progress io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("hub: download %s: %w", url, err)
	}
	want := fmt.Sprintf("bytes %d-%d/%d", start, end-1, size)
	resp, err := d.get(ctx, url, http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", start, end-1)}})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent:
		if got := resp.Header.Get("Content-Range"); got != want {
			if _, total, ok := strings.Cut(got, "/"); ok && total != strconv.FormatInt(size, 10) && total != "*" {
				return 0, fmt.Errorf("%w: GET %s: Content-Range %q: the file has %s bytes, want %d (changed upstream?)", ErrChecksum, url, got, total, size)
			}
			return 0, fmt.Errorf("%w: GET %s: Content-Range %q, want %q", ErrDownload, url, got, want)
		}
	case resp.StatusCode == http.StatusOK && start == 0 && end == size:
		if resp.ContentLength >= 0 && resp.ContentLength != size {
			return 0, fmt.Errorf("%w: GET %s: the server announces %d bytes, want %d", ErrChecksum, url, resp.ContentLength, size)
		}
	case resp.StatusCode == http.StatusOK:
		return 0, fmt.Errorf("%w: GET %s: the server ignored the Range header (answered 200, want 206 Partial Content)", ErrDownload, url)
	default:
		return 0, statusError(url, resp)
	}
	w := io.Writer(io.NewOffsetWriter(dst, start))
	if progress != nil {
		w = io.MultiWriter(w, progress)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, end-start))
	if err == nil && n < end-start {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return n, fmt.Errorf("%w: GET %s: bytes %d..%d: after %d bytes: %w", ErrDownload, url, start, end, n, err)
	}
	return n, nil
}

// handle is one open ReadAtFile of a partial file.
type handle struct {
	p *partial
	f *os.File
}

// open returns a new handle reading p's local file.
func (p *partial) open() (*handle, error) {
	f, err := os.Open(p.local)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	return &handle{p: p, f: f}, nil
}

// ReadAt makes the bytes present (downloading what is missing, whole
// tensors at a time) and reads them from the local file.
func (h *handle) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("hub: %s: negative offset %d", h.p.local, off)
	}
	if end := min(off+int64(len(b)), h.p.file.Size); off < end {
		if err := h.p.ensure(off, end); err != nil {
			return 0, err
		}
	}
	return h.f.ReadAt(b, off)
}

func (h *handle) Stat() (fs.FileInfo, error) { return h.f.Stat() }
func (h *handle) Close() error               { return h.f.Close() }
