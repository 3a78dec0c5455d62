package blocks

import "syscall"

// adviseHuge asks for transparent huge pages over a mapped file: with it,
// a page fault on a file whose page cache is empty reads a 2 MiB folio
// (file systems with large folios, such as ext4 on Linux 6.x, or kernels
// with read-only file THP) and maps it with one page-table entry, so the
// kernels' weight streams take a TLB miss per 2 MiB instead of per 4 KiB
// (7B Q4_K_M decode: 5.7-6.5 -> 7.7-8.7 tok/s measured on this project's
// machine). It is a hint: errors are ignored. There is deliberately no
// MADV_WILLNEED read-ahead: it fills the page cache with small folios,
// which then stay mapped 4 KiB at a time.
func adviseHuge(data []byte) { _ = syscall.Madvise(data, syscall.MADV_HUGEPAGE) }
