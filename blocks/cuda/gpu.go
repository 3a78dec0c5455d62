package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// gpu is one device as an engine uses it: the device's primary context, a
// stream every operation of the engine is queued on, a cuBLAS handle bound
// to that stream and the loaded kernels. Its methods must run inside do,
// which makes the context current on a locked OS thread (the driver keeps
// the current context per thread and goroutines move between threads).
type gpu struct {
	d    *driver
	blas *cublas
	dev  Device

	ctx, stream, handle, module uintptr
	fn                          [numKernels]uintptr
	// ptxCached says whether the kernels came from the PTX cache.
	ptxCached bool
}

// openGPU retains device ordinal's primary context, compiles (or reads
// from cache) the kernels for its architecture and loads them, and creates
// a stream and a cuBLAS handle. Errors wrap ErrUnavailable when a library
// or the device is missing; storeErr reports a PTX cache that could not be
// written (not fatal).
func openGPU(ordinal int, cache ptxCache) (g *gpu, storeErr error, err error) {
	d, err := loadDriver()
	if err != nil {
		return nil, nil, err
	}
	n, err := loadNVRTC()
	if err != nil {
		return nil, nil, err
	}
	useBLAS, err := useCuBLAS()
	if err != nil {
		return nil, nil, err
	}
	var b *cublas
	if useBLAS {
		if b, err = loadCuBLAS(); err != nil {
			return nil, nil, fmt.Errorf("%s=cublas: %w", gemmEnv, err)
		}
	}
	devs, err := Devices()
	if err != nil {
		return nil, nil, err
	}
	if ordinal < 0 || ordinal >= len(devs) {
		return nil, nil, fmt.Errorf("%w: cuda:%d, the driver sees %d GPU(s) (cuda:0..cuda:%d)", ErrUnavailable, ordinal, len(devs), len(devs)-1)
	}
	ptx, cached, storeErr, err := kernelsPTX(n, cache, devs[ordinal].Arch())
	if err != nil {
		return nil, nil, err
	}
	if g, err = newGPU(d, b, devs[ordinal], ptx); err != nil {
		return nil, nil, err
	}
	g.ptxCached = cached
	return g, storeErr, nil
}

// newGPU sets up device dev through driver d and cuBLAS b (nil without
// SWARM_CUDA_GEMM=cublas): its primary context, the kernels of ptx
// (NUL-terminated), a stream and, with b, a cuBLAS handle on it. The tests give it a twin of the driver and cuBLAS.
func newGPU(d *driver, b *cublas, dev Device, ptx []byte) (*gpu, error) {
	g := &gpu{d: d, blas: b, dev: dev}
	err := g.do(func() error {
		var h int32
		if err := d.check("cuDeviceGet", d.cuDeviceGet(&h, int32(dev.Ordinal))); err != nil {
			return err
		}
		if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&g.ctx, h)); err != nil {
			return err
		}
		if err := d.check("cuCtxSetCurrent", d.cuCtxSetCurrent(g.ctx)); err != nil {
			return err
		}
		if err := d.check("cuModuleLoadData", d.cuModuleLoadData(&g.module, unsafe.Pointer(&ptx[0]))); err != nil {
			return err
		}
		for k, name := range kernelNames {
			if err := d.check("cuModuleGetFunction "+name, d.cuModuleGetFunction(&g.fn[k], g.module, name)); err != nil {
				return err
			}
		}
		if err := d.check("cuStreamCreate", d.cuStreamCreate(&g.stream, 0)); err != nil {
			return err
		}
		if b == nil {
			return nil // the matvec kernels need no cuBLAS
		}
		if err := b.check("cublasCreate", b.cublasCreate(&g.handle)); err != nil {
			return err
		}
		return b.check("cublasSetStream", b.cublasSetStream(g.handle, g.stream))
	})
	if err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// do runs f with the device's context current on this goroutine's OS
// thread, locked for the call.
func (g *gpu) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if g.ctx != 0 {
		if err := g.d.check("cuCtxSetCurrent", g.d.cuCtxSetCurrent(g.ctx)); err != nil {
			return err
		}
	}
	return f()
}

// close releases what openGPU created (each part only if it was).
func (g *gpu) close() {
	_ = g.do(func() error {
		if g.handle != 0 {
			g.blas.cublasDestroy(g.handle)
		}
		if g.stream != 0 {
			g.d.cuStreamDestroy(g.stream)
		}
		if g.module != 0 {
			g.d.cuModuleUnload(g.module)
		}
		if g.ctx != 0 {
			g.d.cuDevicePrimaryCtxRelease(int32(g.dev.Ordinal))
		}
		return nil
	})
	g.handle, g.stream, g.module, g.ctx = 0, 0, 0, 0
}

// memInfo is the device's free and total memory, bytes (inside do).
func (g *gpu) memInfo() (free, total uint64, err error) {
	err = g.d.check("cuMemGetInfo", g.d.cuMemGetInfo(&free, &total))
	return free, total, err
}

// alloc reserves bytes of device memory (inside do).
func (g *gpu) alloc(bytes int64) (uint64, error) {
	var p uint64
	if err := g.d.check(fmt.Sprintf("cuMemAlloc(%d bytes)", bytes), g.d.cuMemAlloc(&p, uint64(max(bytes, 1)))); err != nil {
		return 0, err
	}
	return p, nil
}

// free releases device memory from alloc (0 is ignored; inside do).
func (g *gpu) free(p uint64) {
	if p != 0 {
		g.d.cuMemFree(p)
	}
}

// upload copies bytes from host memory src to device address dst, queued
// on the stream; src may be reused when it returns (inside do).
func (g *gpu) upload(dst uint64, src unsafe.Pointer, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return g.d.check("cuMemcpyHtoDAsync", g.d.cuMemcpyHtoDAsync(dst, src, uint64(bytes), g.stream))
}

// uploadF32 copies x to device address dst (inside do).
func (g *gpu) uploadF32(dst uint64, x []float32) error {
	if len(x) == 0 {
		return nil
	}
	err := g.upload(dst, unsafe.Pointer(&x[0]), 4*len(x))
	runtime.KeepAlive(x)
	return err
}

// downloadF32 copies len(x) floats from device address src into x once
// every queued operation before it has run (inside do).
func (g *gpu) downloadF32(x []float32, src uint64) error {
	if len(x) == 0 {
		return nil
	}
	if err := g.d.check("cuMemcpyDtoHAsync", g.d.cuMemcpyDtoHAsync(unsafe.Pointer(&x[0]), src, uint64(4*len(x)), g.stream)); err != nil {
		return err
	}
	err := g.sync()
	runtime.KeepAlive(x)
	return err
}

// sync waits for every queued operation (inside do).
func (g *gpu) sync() error {
	return g.d.check("cuStreamSynchronize", g.d.cuStreamSynchronize(g.stream))
}

// Kernel arguments: every value travels in an 8-byte slot; a kernel's
// 32-bit int and float parameters read the slot's first 4 bytes
// (little-endian).
func argInt(v int) uint64           { return uint64(uint32(int32(v))) }
func argF32(v float32) uint64       { return uint64(math.Float32bits(v)) }
func argPtr(p uint64) uint64        { return p }
func gridFor(total int) uint32      { return uint32(min(max((total+255)/256, 1), 65535)) }
func offF32(p uint64, n int) uint64 { return p + 4*uint64(n) }
func offF16(p uint64, n int) uint64 { return p + 2*uint64(n) }

// launch queues kernel k on grid x block threads with args, in the order
// of its CUDA C parameters (inside do).
func (g *gpu) launch(k kernel, grid, block uint32, args ...uint64) error {
	vals := make([]uint64, len(args))
	copy(vals, args)
	ptrs := make([]unsafe.Pointer, len(vals))
	for i := range vals {
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	r := g.d.cuLaunchKernel(g.fn[k], grid, 1, 1, block, 1, 1, 0, g.stream, unsafe.Pointer(&ptrs[0]), nil)
	runtime.KeepAlive(vals)
	runtime.KeepAlive(ptrs)
	return g.d.check("cuLaunchKernel "+kernelNames[k], r)
}

// launchSegs is launch for a kernel whose last parameter is the segment
// table st (store_kv, attention), after args. The driver copies the
// parameters when the launch is queued, so st may change afterwards.
func (g *gpu) launchSegs(k kernel, grid, block uint32, st *segTable, args ...uint64) error {
	vals := make([]uint64, len(args))
	copy(vals, args)
	ptrs := make([]unsafe.Pointer, len(vals)+1)
	for i := range vals {
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	ptrs[len(vals)] = unsafe.Pointer(st)
	r := g.d.cuLaunchKernel(g.fn[k], grid, 1, 1, block, 1, 1, 0, g.stream, unsafe.Pointer(&ptrs[0]), nil)
	runtime.KeepAlive(vals)
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(st)
	return g.d.check("cuLaunchKernel "+kernelNames[k], r)
}
