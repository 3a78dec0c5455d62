package cuda

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// nvrtc is NVIDIA's runtime compiler (nvrtc.h), the subset that turns
// CUDA C source into PTX. Functions return an nvrtcResult (0 =
// NVRTC_SUCCESS).
type nvrtc struct {
	lib *library

	nvrtcVersion           func(major, minor *int32) int32
	nvrtcGetErrorString    func(r int32) *byte
	nvrtcCreateProgram     func(prog *uintptr, src, name string, nHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram    func(prog uintptr, nOptions int32, options unsafe.Pointer) int32
	nvrtcGetPTXSize        func(prog uintptr, size *uint64) int32
	nvrtcGetPTX            func(prog uintptr, ptx *byte) int32
	nvrtcGetProgramLogSize func(prog uintptr, size *uint64) int32
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32
	nvrtcDestroyProgram    func(prog *uintptr) int32
}

var (
	nvrtcOnce sync.Once
	nvrtcInst *nvrtc
	nvrtcErr  error
)

// loadNVRTC opens NVRTC once per process; errors wrap ErrUnavailable.
// It needs no GPU.
func loadNVRTC() (*nvrtc, error) {
	nvrtcOnce.Do(func() {
		lib, err := open(nvrtcLib)
		if err != nil {
			nvrtcErr = err
			return
		}
		n := &nvrtc{lib: lib}
		nvrtcErr = lib.bind(map[string]any{
			"nvrtcVersion":           &n.nvrtcVersion,
			"nvrtcGetErrorString":    &n.nvrtcGetErrorString,
			"nvrtcCreateProgram":     &n.nvrtcCreateProgram,
			"nvrtcCompileProgram":    &n.nvrtcCompileProgram,
			"nvrtcGetPTXSize":        &n.nvrtcGetPTXSize,
			"nvrtcGetPTX":            &n.nvrtcGetPTX,
			"nvrtcGetProgramLogSize": &n.nvrtcGetProgramLogSize,
			"nvrtcGetProgramLog":     &n.nvrtcGetProgramLog,
			"nvrtcDestroyProgram":    &n.nvrtcDestroyProgram,
		})
		if nvrtcErr == nil {
			nvrtcInst = n
		}
	})
	return nvrtcInst, nvrtcErr
}

// version is NVRTC's "major.minor" (the CUDA toolkit's).
func (n *nvrtc) version() string {
	var major, minor int32
	if n.nvrtcVersion(&major, &minor) != 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

// CompileError is NVRTC's refusal of a source, with its log.
type CompileError struct {
	// Arch is the architecture compiled for ("compute_90").
	Arch string
	// Result is NVRTC's error name (NVRTC_ERROR_COMPILATION).
	Result string
	// Log is the compiler's log: the errors with their lines.
	Log string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: NVRTC compiling for %s: %s:\n%s", e.Arch, e.Result, strings.TrimSpace(e.Log))
}

// compileOptions are the NVRTC options of every compile besides the
// architecture: no fused multiply-adds unless written (kernels.cu follows
// the CPU's arithmetic), C++14.
var compileOptions = []string{"--fmad=false", "--std=c++14"}

// compile turns CUDA C src (name is for the log) into NUL-terminated PTX
// for the virtual architecture arch ("compute_90"). A source NVRTC refuses
// gives a *CompileError carrying its log.
func (n *nvrtc) compile(src, name, arch string) ([]byte, error) {
	var prog uintptr
	if r := n.nvrtcCreateProgram(&prog, src, name, 0, nil, nil); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcCreateProgram: %s", goString(n.nvrtcGetErrorString(r)))
	}
	defer n.nvrtcDestroyProgram(&prog)
	opts := append([]string{"--gpu-architecture=" + arch}, compileOptions...)
	cstrs := make([][]byte, len(opts))
	ptrs := make([]*byte, len(opts))
	for i, o := range opts {
		cstrs[i] = append([]byte(o), 0)
		ptrs[i] = &cstrs[i][0]
	}
	r := n.nvrtcCompileProgram(prog, int32(len(ptrs)), unsafe.Pointer(&ptrs[0]))
	if r != 0 {
		return nil, &CompileError{Arch: arch, Result: goString(n.nvrtcGetErrorString(r)), Log: n.log(prog)}
	}
	var size uint64
	if r := n.nvrtcGetPTXSize(prog, &size); r != 0 || size == 0 {
		return nil, fmt.Errorf("cuda: nvrtcGetPTXSize: %s", goString(n.nvrtcGetErrorString(r)))
	}
	ptx := make([]byte, size)
	if r := n.nvrtcGetPTX(prog, &ptx[0]); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcGetPTX: %s", goString(n.nvrtcGetErrorString(r)))
	}
	return ptx, nil
}

// log is the program's compile log ("" when empty).
func (n *nvrtc) log(prog uintptr) string {
	var size uint64
	if n.nvrtcGetProgramLogSize(prog, &size) != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if n.nvrtcGetProgramLog(prog, &buf[0]) != 0 {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00")
}
