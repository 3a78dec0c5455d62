package cliconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// Bytes is a pflag.Value holding a size in bytes that parses human sizes
// with go-humanize: "8GiB" (8 * 2^30), "500MB" (500 * 10^6), "1.5 GB",
// "2000000" (plain bytes). Negative sizes are refused.
type Bytes struct{ p *int64 }

// NewBytes binds a Bytes value to p.
func NewBytes(p *int64) *Bytes { return &Bytes{p: p} }

// Set parses s.
func (b *Bytes) Set(s string) error {
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return fmt.Errorf("size %q is negative; want >= 0 bytes, e.g. 8GiB or 500MB", s)
	}
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("size %q: %w; want bytes or a size such as 8GiB or 500MB", s, err)
	}
	if n > math.MaxInt64 {
		return fmt.Errorf("size %q is more than %d bytes", s, int64(math.MaxInt64))
	}
	*b.p = int64(n)
	return nil
}

// String prints the size in bytes (what Set reads back).
func (b *Bytes) String() string {
	if b.p == nil {
		return "0"
	}
	return strconv.FormatInt(*b.p, 10)
}

// Type names the value in --help.
func (b *Bytes) Type() string { return "size" }

// HumanBytes formats n bytes for people in binary units with one decimal
// ("1.5 GiB", "512 B"); negative values keep their sign.
func HumanBytes(n int64) string {
	if n < 0 {
		return "-" + humanize.IBytes(uint64(-n))
	}
	return humanize.IBytes(uint64(n))
}
