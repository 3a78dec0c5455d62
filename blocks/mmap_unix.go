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

// adviseWillNeed asks the kernel to start reading bytes off..off+n of the
// mapping data in the background (MADV_WILLNEED on the pages they cover),
// so that the first forward does not fault them in 4 KiB at a time. It is
// a hint: errors are ignored.
func adviseWillNeed(data []byte, off, n int64) {
	const page = 4096
	lo := off &^ (page - 1)
	hi := min(int64(len(data)), off+n)
	if lo >= hi {
		return
	}
	_ = syscall.Madvise(data[lo:hi], syscall.MADV_WILLNEED)
}
