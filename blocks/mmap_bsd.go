//go:build darwin || freebsd

package blocks

// adviseHuge does nothing: no huge-page hint for file mappings here.
func adviseHuge([]byte) {}

// adviseWillNeed does nothing here: pages fault in on first use.
func adviseWillNeed([]byte, int64, int64) {}
