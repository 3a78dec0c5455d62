package blocks

import "syscall"

// adviseHuge asks for transparent huge pages over a mapped file (honoured
// by kernels with read-only file THP; a hint, errors ignored).
func adviseHuge(data []byte) { _ = syscall.Madvise(data, syscall.MADV_HUGEPAGE) }

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
