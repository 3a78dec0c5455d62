package blocks

import "syscall"

// adviseHuge asks for transparent huge pages over a mapped file (honoured
// by kernels with read-only file THP; a hint, errors ignored).
func adviseHuge(data []byte) { _ = syscall.Madvise(data, syscall.MADV_HUGEPAGE) }
