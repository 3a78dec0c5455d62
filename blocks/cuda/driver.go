package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// The CUDA driver API (cuda.h), the subset the engine uses. Functions
// return a CUresult (0 = CUDA_SUCCESS). Device pointers are
// CUdeviceptr (uint64); contexts, modules, functions and streams are
// opaque handles (uintptr). The _v2 names are the ones cuda.h's macros
// select since CUDA 3.2/4.0.
type driver struct {
	lib *library

	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(v *int32) int32
	cuGetErrorName            func(r int32, s **byte) int32
	cuGetErrorString          func(r int32, s **byte) int32
	cuDeviceGetCount          func(n *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem          func(bytes *uint64, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuMemGetInfo              func(free, total *uint64) int32
	cuMemAlloc                func(p *uint64, bytes uint64) int32
	cuMemFree                 func(p uint64) int32
	cuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, bytes uint64, stream uintptr) int32
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, bytes uint64, stream uintptr) int32
	cuMemsetD8Async           func(dst uint64, v uint8, n uint64, stream uintptr) int32
	cuModuleLoadData          func(mod *uintptr, image unsafe.Pointer) int32
	cuModuleUnload            func(mod uintptr) int32
	cuModuleGetFunction       func(fn *uintptr, mod uintptr, name string) int32
	cuStreamCreate            func(s *uintptr, flags uint32) int32
	cuStreamDestroy           func(s uintptr) int32
	cuStreamSynchronize       func(s uintptr) int32
	cuLaunchKernel            func(fn uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
}

// Driver attributes and results the engine reads (cuda.h CUdevice_attribute,
// CUresult).
const (
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
	attrMultiprocessorCount    = 16

	cudaErrorNoDevice = 100
)

var (
	driverOnce sync.Once
	driverInst *driver
	driverErr  error
)

// loadDriver opens the CUDA driver library and calls cuInit once per
// process. Errors wrap ErrUnavailable: the library is missing, lacks a
// symbol, or finds no usable GPU (cuInit's own error is named).
func loadDriver() (*driver, error) {
	driverOnce.Do(func() {
		driverInst, driverErr = openDriver()
	})
	return driverInst, driverErr
}

func openDriver() (*driver, error) {
	lib, err := open(driverLib)
	if err != nil {
		return nil, err
	}
	d := &driver{lib: lib}
	err = lib.bind(map[string]any{
		"cuInit":                       &d.cuInit,
		"cuDriverGetVersion":           &d.cuDriverGetVersion,
		"cuGetErrorName":               &d.cuGetErrorName,
		"cuGetErrorString":             &d.cuGetErrorString,
		"cuDeviceGetCount":             &d.cuDeviceGetCount,
		"cuDeviceGet":                  &d.cuDeviceGet,
		"cuDeviceGetName":              &d.cuDeviceGetName,
		"cuDeviceGetAttribute":         &d.cuDeviceGetAttribute,
		"cuDeviceTotalMem_v2":          &d.cuDeviceTotalMem,
		"cuDevicePrimaryCtxRetain":     &d.cuDevicePrimaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2": &d.cuDevicePrimaryCtxRelease,
		"cuCtxSetCurrent":              &d.cuCtxSetCurrent,
		"cuMemGetInfo_v2":              &d.cuMemGetInfo,
		"cuMemAlloc_v2":                &d.cuMemAlloc,
		"cuMemFree_v2":                 &d.cuMemFree,
		"cuMemcpyHtoDAsync_v2":         &d.cuMemcpyHtoDAsync,
		"cuMemcpyDtoHAsync_v2":         &d.cuMemcpyDtoHAsync,
		"cuMemsetD8Async":              &d.cuMemsetD8Async,
		"cuModuleLoadData":             &d.cuModuleLoadData,
		"cuModuleUnload":               &d.cuModuleUnload,
		"cuModuleGetFunction":          &d.cuModuleGetFunction,
		"cuStreamCreate":               &d.cuStreamCreate,
		"cuStreamDestroy_v2":           &d.cuStreamDestroy,
		"cuStreamSynchronize":          &d.cuStreamSynchronize,
		"cuLaunchKernel":               &d.cuLaunchKernel,
	})
	if err != nil {
		return nil, err
	}
	if r := d.cuInit(0); r != 0 {
		return nil, fmt.Errorf("%w: cuInit (%s): %w", ErrUnavailable, lib.path, d.err(r))
	}
	return d, nil
}

// cudaError is a CUresult other than CUDA_SUCCESS.
type cudaError struct {
	code       int32
	name, desc string
}

func (e *cudaError) Error() string {
	return fmt.Sprintf("%s (%d): %s", e.name, e.code, e.desc)
}

// err names the CUresult r.
func (d *driver) err(r int32) error {
	e := &cudaError{code: r, name: "CUDA_ERROR_UNKNOWN", desc: "unrecognized error code"}
	var s *byte
	if d.cuGetErrorName(r, &s) == 0 && s != nil {
		e.name = goString(s)
	}
	if d.cuGetErrorString(r, &s) == 0 && s != nil {
		e.desc = goString(s)
	}
	return e
}

// check turns the result of op into an error naming it (nil on success).
func (d *driver) check(op string, r int32) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %w", op, d.err(r))
}

// goString copies the NUL-terminated C string at p (static memory of the
// library) into Go memory.
func goString(p *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// Device describes one GPU as the driver reports it.
type Device struct {
	// Ordinal is the device's index (`--device cuda:N`).
	Ordinal int `json:"ordinal"`
	// Name is the product name ("NVIDIA H100 80GB HBM3").
	Name string `json:"name"`
	// Major and Minor are the compute capability (9.0 for Hopper).
	Major int `json:"major"`
	Minor int `json:"minor"`
	// SMs is the number of streaming multiprocessors.
	SMs int `json:"sms"`
	// TotalBytes is the device memory, bytes.
	TotalBytes uint64 `json:"total_bytes"`
	// DriverVersion is cuDriverGetVersion's value (12040 for 12.4).
	DriverVersion int `json:"driver_version"`
}

// Arch is the NVRTC virtual architecture of the device ("compute_90").
func (d Device) Arch() string { return fmt.Sprintf("compute_%d%d", d.Major, d.Minor) }

// Devices lists the GPUs the driver sees. Errors wrap ErrUnavailable when
// the driver cannot be loaded or sees none.
func Devices() ([]Device, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	var n, ver int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: the CUDA driver sees no GPU", ErrUnavailable)
	}
	_ = d.cuDriverGetVersion(&ver)
	out := make([]Device, 0, n)
	for i := range n {
		dev, err := d.device(int(i))
		if err != nil {
			return nil, err
		}
		dev.DriverVersion = int(ver)
		out = append(out, dev)
	}
	return out, nil
}

// device describes GPU ordinal i.
func (d *driver) device(i int) (Device, error) {
	var h int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&h, int32(i))); err != nil {
		return Device{}, err
	}
	var name [256]byte
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), h)); err != nil {
		return Device{}, err
	}
	out := Device{Ordinal: i, Name: goString(&name[0])}
	for _, a := range []struct {
		attr int32
		dst  *int
	}{{attrComputeCapabilityMajor, &out.Major}, {attrComputeCapabilityMinor, &out.Minor}, {attrMultiprocessorCount, &out.SMs}} {
		var v int32
		if err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, a.attr, h)); err != nil {
			return Device{}, err
		}
		*a.dst = int(v)
	}
	if err := d.check("cuDeviceTotalMem", d.cuDeviceTotalMem(&out.TotalBytes, h)); err != nil {
		return Device{}, err
	}
	return out, nil
}
