package blocks

// UseFullCaches makes e's new sessions give sliding-window blocks
// full-length caches, read in place, instead of ring caches: the
// computation before ring caches existed, for tests to compare against.
// e must be an Engine of this package.
func UseFullCaches(e Engine) { e.(*cpuEngine).fullCaches = true }

// CapacityCacheBytes is the bytes of the key and value pages a session of
// this package holds once every row of its caches is written.
func CapacityCacheBytes(s Session) int64 {
	var n int64
	for _, c := range s.(*cpuSession).caches {
		size := int64(4)
		if c.f16 {
			size = 2
		}
		n += 2 * size * int64(c.rows*c.kvDim)
	}
	return n
}

// MappedMatrices is the number of e's weight matrices that point into a
// memory-mapped file instead of the heap. e must be an Engine of this
// package.
// HeadMappedMatrices is the number of h's matrices (embedding, LM head)
// used in place in a file mapping.
func HeadMappedMatrices(h Head) int { return h.(*cpuHead).mapped }

func MappedMatrices(e Engine) int {
	ce := e.(*cpuEngine)
	ce.mu.RLock()
	defer ce.mu.RUnlock()
	return len(ce.releases)
}

// Unmapped returns a function that reports whether the mapping of m's
// first file has been released by all its holders (call it before Close).
func Unmapped(m *Model) func() bool {
	m.mu.Lock()
	mp := m.files[0].mapped
	m.mu.Unlock()
	return func() bool {
		mp.mu.Lock()
		defer mp.mu.Unlock()
		return mp.data == nil
	}
}

// F16x8 reports whether this process sums binary16 products as f16x8
// (gemm_x8.go): one 8-lane accumulator a row, where CPUs lack AVX-512.
func F16x8() bool { return f16x8 }
