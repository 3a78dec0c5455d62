//go:build !(linux || darwin || freebsd)

package blocks

import (
	"errors"
	"os"
)

// mapFile is not available on this system: every tensor is read into the
// heap instead (Model.fileMapping falls back).
func mapFile(*os.File, int64) ([]byte, error) {
	return nil, errors.New("blocks: memory-mapped weights are not supported on this system")
}

func unmapFile([]byte) error { return nil }
