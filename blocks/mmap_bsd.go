//go:build darwin || freebsd

package blocks

// adviseHuge does nothing: no huge-page hint for file mappings here.
func adviseHuge([]byte) {}
