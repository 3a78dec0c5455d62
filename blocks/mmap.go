package blocks

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/swarmllm/swarm/swarm"
)

// Memory-mapped weights. A model file opened with os.Open (the default, not
// a WithOpenFile opener such as the hub's downloading one) is mapped
// read-only and shared (mapFile, mmap_unix.go) the first time an engine
// asks for its tensors; a matrix whose rows lie in the file exactly as the
// kernels read them (every dtype the CPU engine computes on: f32, f16,
// bf16 and GGML's quantized blocks, little-endian, element-aligned, rows
// not permuted) points into the mapping instead of being copied into the
// Go heap. The weights are then the kernel's page cache: loading costs no
// copy, and two processes serving the same file share the same physical
// pages. Tensors that need a transform on load (q/k rows permuted into
// adjacent-pair RoPE order, misaligned f32/f16 data) are copied as before.
// Where mapping is not available (Windows, Plan 9, other openers) every
// tensor is read.
//
// The file must not be truncated or rewritten while mapped: like llama.cpp's
// mmap, a page that vanished faults the process.

// mapping is one read-only shared mapping of a whole file, released when
// its last holder (the Model and every engine with matrices in it) lets go.
type mapping struct {
	mu   sync.Mutex
	data []byte
	refs int
}

// retain adds a holder.
func (mp *mapping) retain() {
	mp.mu.Lock()
	mp.refs++
	mp.mu.Unlock()
}

// release drops a holder and unmaps when it was the last.
func (mp *mapping) release() error {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	mp.refs--
	if mp.refs > 0 || mp.data == nil {
		return nil
	}
	data := mp.data
	mp.data = nil
	return unmapFile(data)
}

// littleEndian reports whether the host stores numbers little-endian, as
// GGUF, safetensors and llama2.c files do: mapped f32/f16 data is read in
// place only then.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// fileMapping returns mf's mapping with a reference taken for the caller,
// mapping the file on first use, or nil when it cannot be mapped (not an
// *os.File, mapping unsupported or refused: the caller reads instead).
func (m *Model) fileMapping(mf *modelFile) *mapping {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || mf.mapFailed {
		return nil
	}
	if mf.mapped == nil {
		f, ok := mf.f.(*os.File)
		if !ok || mf.size <= 0 {
			mf.mapFailed = true
			return nil
		}
		data, err := mapFile(f, mf.size)
		if err != nil {
			mf.mapFailed = true
			return nil
		}
		mf.mapped = &mapping{data: data, refs: 1} // the Model's reference
	}
	mf.mapped.retain()
	return mf.mapped
}

// MapRows returns block b's matrix in slot as its stored bytes in row
// order, in place in a read-only mapping of the file, and the function that
// releases them (call it once, after the last read of raw). ok is false
// when the matrix cannot be used in place — its rows are permuted on load,
// or its file is not mapped — and the caller reads it with ReadRows.
// Errors wrap ErrArgument (no such tensor) or ErrClosed.
func (t *spanTensors) MapRows(b int, slot Slot) (raw []byte, release func(), ok bool, err error) {
	r, ok := t.ref(b, slot)
	if !ok {
		return nil, nil, false, fmt.Errorf("%w: block %d has no tensor in slot %d (span %s)", ErrArgument, b, slot, t.span)
	}
	return t.m.mapTensor(r)
}

// mapTensor returns r's stored bytes in place in a read-only mapping of its
// file and the function that releases them (call it once, after the last
// read of raw); ok is false when r's rows are permuted on load or its file
// cannot be mapped (read it instead). Errors wrap ErrClosed.
func (m *Model) mapTensor(r tensorRef) (raw []byte, release func(), ok bool, err error) {
	if r.permuteHeads > 0 {
		return nil, nil, false, nil
	}
	mp := m.fileMapping(r.file)
	if mp == nil {
		m.mu.Lock()
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return nil, nil, false, fmt.Errorf("%w: model %s", ErrClosed, m.path)
		}
		return nil, nil, false, nil
	}
	raw = mp.data[r.offset : r.offset+r.bytes() : r.offset+r.bytes()]
	var once sync.Once
	return raw, func() { once.Do(func() { _ = mp.release() }) }, true, nil
}

// loadMatrix returns tensor r as a matrix in place in its file's mapping,
// appending the mapping's release to releases, or read into the heap
// where it cannot be used in place (see mappedMatrix, mapTensor).
func (m *Model) loadMatrix(r tensorRef, releases *[]func()) (*matrix, error) {
	raw, release, ok, err := m.mapTensor(r)
	if err != nil {
		return nil, err
	}
	if ok {
		mat, inPlace, err := mappedMatrix(r.rows, r.cols, r.dtype, raw)
		if err != nil {
			release()
			return nil, fmt.Errorf("%s: tensor %s: %w", r.file.path, r.name, err)
		}
		if inPlace {
			*releases = append(*releases, release)
			return mat, nil
		}
		release()
	}
	return m.readMatrix(r)
}

// RowMapper is implemented by the SpanTensors of a Model whose files can be
// memory-mapped (see MapRows); backends that can compute on weights in
// place use it and fall back to ReadRows when ok is false.
type RowMapper interface {
	MapRows(b int, slot Slot) (raw []byte, release func(), ok bool, err error)
}

// mappedMatrix returns a matrix [rows, cols] of dtype d whose data is raw
// itself (rows*RowBytes bytes, read-only), or ok = false when raw cannot be
// read in place (a big-endian host, or f32/f16/bf16 data not aligned to its
// element size).
func mappedMatrix(rows, cols int, d swarm.DType, raw []byte) (*matrix, bool, error) {
	m := &matrix{rows: rows, cols: cols, dtype: d}
	n := rows * cols
	switch d {
	case swarm.DTypeF32:
		if !littleEndian || uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%4 != 0 || len(raw) != 4*n {
			return nil, false, nil
		}
		m.f32 = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), n)
	case swarm.DTypeF16, swarm.DTypeBF16:
		if !littleEndian || uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%2 != 0 || len(raw) != 2*n {
			return nil, false, nil
		}
		m.u16 = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(raw))), n)
	default:
		deq, ok := dequantizers[d]
		if !ok {
			return nil, false, fmt.Errorf("%w: unsupported dtype %v", ErrFormat, d)
		}
		if err := d.CheckRow(int64(cols)); err != nil {
			return nil, false, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		m.deq, m.bs, m.bb = deq, d.BlockSize(), int(d.Bytes(int64(d.BlockSize())))
		if len(raw) != rows*(cols/m.bs)*m.bb {
			return nil, false, nil
		}
		m.q = raw
	}
	return m, true, nil
}

// copyLE32 and copyLE16 copy little-endian raw bytes into dst (4-byte or
// 2-byte elements): one memmove on a little-endian host.
func copyLE32(dst []float32, raw []byte) {
	if littleEndian {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst)), raw)
		return
	}
	for i := range len(raw) / 4 {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
}

func copyLE16(dst []uint16, raw []byte) {
	if littleEndian {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 2*len(dst)), raw)
		return
	}
	for i := range len(raw) / 2 {
		dst[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
}
