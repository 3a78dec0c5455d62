package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// span is a half-open byte range [Start, End) of a file.
type span struct{ Start, End int64 }

// rangeSet is a set of bytes of a file as sorted, disjoint, non-adjacent
// half-open ranges.
type rangeSet []span

// add returns the set with [start, end) added.
func (s rangeSet) add(start, end int64) rangeSet {
	if start >= end {
		return s
	}
	out := make(rangeSet, 0, len(s)+1)
	for _, r := range s {
		switch {
		case r.End < start:
			out = append(out, r)
		case r.Start > end:
			out = append(out, span{start, end})
			start, end = r.Start, r.End
		default: // overlapping or adjacent: merge
			start, end = min(start, r.Start), max(end, r.End)
		}
	}
	return append(out, span{start, end})
}

// union returns s plus every range of o.
func (s rangeSet) union(o rangeSet) rangeSet {
	for _, r := range o {
		s = s.add(r.Start, r.End)
	}
	return s
}

// missing returns the parts of [start, end) that s lacks, in order.
func (s rangeSet) missing(start, end int64) []span {
	var out []span
	for _, r := range s {
		if r.End <= start {
			continue
		}
		if r.Start >= end {
			break
		}
		if r.Start > start {
			out = append(out, span{start, r.Start})
		}
		start = max(start, r.End)
	}
	if start < end {
		out = append(out, span{start, end})
	}
	return out
}

// covers reports whether s holds all of [start, end).
func (s rangeSet) covers(start, end int64) bool { return len(s.missing(start, end)) == 0 }

// bytes is the number of bytes in s.
func (s rangeSet) bytes() int64 {
	var n int64
	for _, r := range s {
		n += r.End - r.Start
	}
	return n
}

// sidecarSuffix names the file beside a partly downloaded file that lists
// the byte ranges it holds: FILE.ranges. A file with a sidecar is partial;
// one without is complete (checked when it became so).
const sidecarSuffix = ".ranges"

// sidecar is the JSON content of FILE.ranges. Size and SHA256 identify the
// upstream file the ranges belong to: a sidecar describing another size or
// hash is stale and its file is started afresh.
type sidecar struct {
	// Size is the full file's length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the full file's SHA-256 (lower-case hex), "" if unknown.
	SHA256 string `json:"sha256,omitempty"`
	// Present lists the byte ranges [start, end) written and synced.
	Present [][2]int64 `json:"present"`
}

// readSidecar reads path; a missing file is (nil, nil).
func readSidecar(path string) (*sidecar, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	var sc sidecar
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, fmt.Errorf("hub: %s is not a ranges sidecar (delete it to start the download again): %w", path, err)
	}
	for _, r := range sc.Present {
		if r[0] < 0 || r[1] < r[0] || r[1] > sc.Size {
			return nil, fmt.Errorf("hub: %s: range %v outside a %d-byte file (delete it to start the download again)", path, r, sc.Size)
		}
	}
	return &sc, nil
}

// present returns the sidecar's ranges as a set.
func (sc *sidecar) present() rangeSet {
	var s rangeSet
	for _, r := range sc.Present {
		s = s.add(r[0], r[1])
	}
	return s
}

// writeSidecar writes sc to path atomically (a temporary file renamed over
// it), so a crash leaves the old list or the new one, never half of one.
func writeSidecar(path string, size int64, sha string, present rangeSet) error {
	sc := sidecar{Size: size, SHA256: sha, Present: make([][2]int64, 0, len(present))}
	for _, r := range present {
		sc.Present = append(sc.Present, [2]int64{r.Start, r.End})
	}
	raw, err := json.Marshal(sc)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	_, err = tmp.Write(raw)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("hub: write %s: %w", path, err)
	}
	return nil
}

// extents are the byte ranges of a file's tensors, sorted by start: a miss
// inside one is widened to the whole tensor, so loading a tensor in chunks
// makes one request, and never to bytes of another tensor.
type extents []span

// widen returns [start, end) grown to the union of the extents it touches.
func (e extents) widen(start, end int64) (int64, int64) {
	i, _ := slices.BinarySearchFunc(e, start, func(x span, off int64) int {
		switch {
		case x.End <= off:
			return -1
		case x.Start > off:
			return 1
		}
		return 0
	})
	for ; i < len(e) && e[i].Start < end; i++ {
		if e[i].End > start {
			start, end = min(start, e[i].Start), max(end, e[i].End)
		}
	}
	return start, end
}
