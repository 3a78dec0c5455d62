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
		n += 2 * 4 * int64(c.rows*c.kvDim)
	}
	return n
}
