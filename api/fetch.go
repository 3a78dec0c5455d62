package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// MaxInfoBytes bounds an Info document read from a server, in bytes: a
// larger answer is refused (ErrBadInfo) rather than read into memory.
const MaxInfoBytes = 4 << 20

// DefaultInfoTimeout bounds one read of a server's Info document when the
// caller's context has no deadline of its own.
const DefaultInfoTimeout = 10 * time.Second

// ErrBadInfo is returned (wrapped) for an Info document that is too large
// or not valid JSON, or an HTTP answer other than 200 OK.
var ErrBadInfo = errors.New("api: bad info document")

// ReadInfo decodes one Info document of at most MaxInfoBytes from r (the
// body of GET /v1/info, or a /swarm/info/1 stream). Errors wrap ErrBadInfo
// for an oversized or malformed document, or are r's read error.
func ReadInfo(r io.Reader) (Info, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxInfoBytes+1))
	if err != nil {
		return Info{}, err
	}
	if len(body) > MaxInfoBytes {
		return Info{}, fmt.Errorf("%w: larger than %d bytes", ErrBadInfo, MaxInfoBytes)
	}
	var info Info
	if err := json.Unmarshal(body, &info); err != nil {
		return Info{}, fmt.Errorf("%w: %w", ErrBadInfo, err)
	}
	return info, nil
}

// FetchInfo reads the Info document at infoURL (Endpoint.Info, or a
// replica's base URL + InfoPath) with one GET through hc (nil:
// http.DefaultClient), within ctx, or within DefaultInfoTimeout when ctx
// has no deadline. Errors name the URL and wrap ErrBadInfo, the transport's
// error or ctx's error.
func FetchInfo(ctx context.Context, hc *http.Client, infoURL string) (Info, error) {
	info, _, _, err := getInfo(ctx, hc, infoURL, infoURL)
	return info, err
}

// getInfo GETs reqURL (infoURL, with a query maybe) and decodes the Info
// document, returning its exact body and the answer's headers too; errors
// name infoURL.
func getInfo(ctx context.Context, hc *http.Client, infoURL, reqURL string) (Info, []byte, http.Header, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultInfoTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, reqURL, nil)
	if err != nil {
		return Info{}, nil, nil, fmt.Errorf("api: GET %s: %w", infoURL, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Info{}, nil, nil, fmt.Errorf("api: GET %s: %w", infoURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxInfoBytes))
		return Info{}, nil, nil, fmt.Errorf("api: GET %s: %w: HTTP %s", infoURL, ErrBadInfo, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxInfoBytes+1))
	if err != nil {
		return Info{}, nil, nil, fmt.Errorf("api: GET %s: %w", infoURL, err)
	}
	info, err := ReadInfo(bytes.NewReader(body))
	if err != nil {
		return Info{}, nil, nil, fmt.Errorf("api: GET %s: %w", infoURL, err)
	}
	return info, body, resp.Header, nil
}
