//go:build linux || darwin || freebsd

package blocks

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only and shared.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%w: %s: %d bytes do not fit the address space", ErrFormat, f.Name(), size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("blocks: mmap %s: %w", f.Name(), err)
	}
	adviseHuge(data)
	return data, nil
}

// unmapFile releases a mapping of mapFile.
func unmapFile(data []byte) error {
	if err := syscall.Munmap(data); err != nil {
		return fmt.Errorf("blocks: munmap: %w", err)
	}
	return nil
}
