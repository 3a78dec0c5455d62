package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
)

// downloader fetches files for one Resolve call.
type downloader struct {
	client   *http.Client
	progress io.Writer
	token    string // HF_TOKEN: sent as a bearer token to the endpoint
}

// get starts a GET of url with the token and extra headers set.
func (d downloader) get(ctx context.Context, url string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDownload, url, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if d.token != "" {
		// net/http drops it on a redirect to another host (the hub's CDN).
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: GET %s: %w", ErrDownload, url, ctx.Err())
		}
		return nil, fmt.Errorf("%w: GET %s: %w", ErrDownload, url, &unreachable{err})
	}
	return resp, nil
}

// unreachable marks a request that got no HTTP answer at all (no route, no
// DNS, connection refused): the machine is offline or the endpoint down.
type unreachable struct{ err error }

func (u *unreachable) Error() string { return u.err.Error() }
func (u *unreachable) Unwrap() error { return u.err }

// statusError describes a refused request, with a hint for the statuses
// the hub answers for gated, private or missing repositories. It wraps
// ErrDownload.
func statusError(url string, resp *http.Response) error {
	hint := ""
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (a gated or private repository needs HF_TOKEN)"
	case http.StatusNotFound:
		hint = " (no such repository, revision or file)"
	}
	return &httpError{msg: fmt.Sprintf("GET %s: %s%s", url, resp.Status, hint), code: resp.StatusCode}
}

// httpError is a request answered with an unexpected status.
type httpError struct {
	msg  string
	code int
}

func (e *httpError) Error() string { return ErrDownload.Error() + ": " + e.msg }
func (e *httpError) Unwrap() error { return ErrDownload }

// transient reports whether a failed request may succeed if tried again:
// no answer at all, a 5xx or 429 status, or a body cut short.
func transient(err error) bool {
	var u *unreachable
	var h *httpError
	switch {
	case errors.As(err, &u), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &h):
		return h.code >= 500 || h.code == http.StatusTooManyRequests
	}
	return false
}

// fetch downloads url into dst through a temporary file in dst's
// directory, checking size and SHA-256 before renaming it into place.
func (d downloader) fetch(ctx context.Context, url string, f File, dst string) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hub: download %s: %w", url, err)
	}
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("hub: cache directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".*.part")
	if err != nil {
		return fmt.Errorf("hub: cache directory: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	resp, err := d.get(ctx, url, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(url, resp)
	}
	if resp.ContentLength >= 0 && resp.ContentLength != f.Size {
		return fmt.Errorf("%w: GET %s: the server announces %d bytes, want %d", ErrChecksum, url, resp.ContentLength, f.Size)
	}

	sum := sha256.New()
	blob := sha1.New() // git's blob id: sha1("blob <size>\x00" + content)
	fmt.Fprintf(blob, "blob %d\x00", f.Size)
	sinks := []io.Writer{tmp, sum, blob}
	if d.progress != nil {
		bar := progressbar.NewOptions64(f.Size,
			progressbar.OptionSetWriter(d.progress),
			progressbar.OptionSetDescription("downloading "+filepath.Base(dst)),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(d.progress) }),
		)
		defer bar.Exit()
		sinks = append(sinks, bar)
	}
	// Read at most one byte more than expected: enough to tell "too long".
	n, err := io.Copy(io.MultiWriter(sinks...), io.LimitReader(resp.Body, f.Size+1))
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("%w: GET %s: after %d of %d bytes: %w", ErrDownload, url, n, f.Size, err)
	}
	switch {
	case n > f.Size:
		return fmt.Errorf("%w: GET %s: the body is longer than %d bytes", ErrChecksum, url, f.Size)
	case n < f.Size:
		return fmt.Errorf("%w: GET %s: the body is %d bytes, want %d", ErrChecksum, url, n, f.Size)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); f.SHA256 != "" && got != f.SHA256 {
		return fmt.Errorf("%w: GET %s: sha256 %s, want %s (nothing was kept)", ErrChecksum, url, got, f.SHA256)
	}
	if got := hex.EncodeToString(blob.Sum(nil)); f.BlobID != "" && got != f.BlobID {
		return fmt.Errorf("%w: GET %s: git blob id %s, want %s (nothing was kept)", ErrChecksum, url, got, f.BlobID)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("hub: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("hub: write %s: %w", tmp.Name(), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	return nil
}
