package ingress

import (
	"bufio"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// Anonymous is the usage account of requests when no API keys are
// configured.
const Anonymous = "anonymous"

// Keys are the API keys an ingress accepts (`swarm proxy --api-keys FILE`).
// It is immutable after loading and safe for concurrent use.
type Keys struct {
	keys  []string
	names []string
}

// ParseKeys reads an API key file: one key per line, optionally followed by
// whitespace and a name for usage accounting (default: the key's first 8
// characters and "..."); blank lines and lines starting with '#' are
// ignored. Errors wrap ErrBadOption naming the line (a duplicated key, a
// key shorter than 8 characters, or no key at all).
func ParseKeys(r io.Reader) (*Keys, error) {
	k := &Keys{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		key := f[0]
		switch {
		case len(key) < 8:
			return nil, fmt.Errorf("%w: API key file line %d: key of %d characters, want at least 8", ErrBadOption, line, len(key))
		case seen[key]:
			return nil, fmt.Errorf("%w: API key file line %d: duplicated key", ErrBadOption, line)
		}
		seen[key] = true
		name := key[:8] + "..."
		if len(f) > 1 {
			name = strings.Join(f[1:], " ")
		}
		k.keys = append(k.keys, key)
		k.names = append(k.names, name)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: API key file: %w", ErrBadOption, err)
	}
	if len(k.keys) == 0 {
		return nil, fmt.Errorf("%w: API key file has no key (one key per line, optionally followed by a name)", ErrBadOption)
	}
	return k, nil
}

// LoadKeys reads an API key file (see ParseKeys).
func LoadKeys(path string) (*Keys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --api-keys: %w", ErrBadOption, err)
	}
	defer f.Close()
	return ParseKeys(f)
}

// Lookup returns the name of a key, comparing in constant time.
func (k *Keys) Lookup(key string) (string, bool) {
	name, ok := "", false
	for i, kk := range k.keys {
		if subtle.ConstantTimeCompare([]byte(kk), []byte(key)) == 1 {
			name, ok = k.names[i], true
		}
	}
	return name, ok
}

// bearer returns the key of "Authorization: Bearer KEY", or of the
// api_key query parameter (browsers cannot set headers on websockets).
func bearer(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if v, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(v)
		}
		return ""
	}
	return r.URL.Query().Get("api_key")
}

// Usage is what one account (an API key's name, or Anonymous) has used.
type Usage struct {
	// Key is the account name.
	Key string `json:"key"`
	// Requests counts generation requests (OpenAI requests, PETALS
	// generate calls), failed ones included.
	Requests int64 `json:"requests"`
	// PromptTokens and CompletionTokens count tokens as in OpenAI's usage.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// TotalTokens is their sum.
	TotalTokens int64 `json:"total_tokens"`
}

// usageBook counts usage per account.
type usageBook struct {
	mu sync.Mutex
	// byKeyLocked is guarded by mu.
	byKeyLocked map[string]*Usage
}

func (b *usageBook) add(key string, requests, prompt, completion int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byKeyLocked == nil {
		b.byKeyLocked = map[string]*Usage{}
	}
	u := b.byKeyLocked[key]
	if u == nil {
		u = &Usage{Key: key}
		b.byKeyLocked[key] = u
	}
	u.Requests += int64(requests)
	u.PromptTokens += int64(prompt)
	u.CompletionTokens += int64(completion)
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
}

func (b *usageBook) get(key string) Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u := b.byKeyLocked[key]; u != nil {
		return *u
	}
	return Usage{Key: key}
}
