package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnavailable is wrapped by every error that says the CUDA backend
// cannot run on this machine: a library that could not be opened (the
// message names it), a symbol missing from it, no GPU, or an operating
// system without CUDA.
var ErrUnavailable = errors.New("cuda: unavailable")

// libSpec names one shared library the backend opens at run time.
type libSpec struct {
	// what is the library's name for people ("the CUDA driver").
	what string
	// sonames are tried in order (the newest CUDA major first).
	sonames []string
	// hint says how to get it.
	hint string
}

var (
	driverLib = libSpec{"the CUDA driver", []string{"libcuda.so.1", "libcuda.so"},
		"install the NVIDIA driver (it ships libcuda.so.1)"}
	nvrtcLib = libSpec{"NVRTC", []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"},
		"install the CUDA toolkit's runtime compiler (Debian: libnvrtc12 or libnvrtc11.2; pip: nvidia-cuda-nvrtc-cu12)"}
	cublasLib = libSpec{"cuBLAS", []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"},
		"install cuBLAS (Debian: libcublas12 or libcublas11; pip: nvidia-cublas-cu12)"}
)

// LibDirEnv names the environment variable with extra directories
// (colon-separated) searched for the CUDA libraries before the system's.
const LibDirEnv = "SWARM_CUDA_LIB_DIR"

// searchDirs lists where the libraries are looked for besides the dynamic
// loader's own path: $SWARM_CUDA_LIB_DIR, $CUDA_HOME/lib64,
// $CUDA_PATH/lib64, /usr/local/cuda/lib64 and WSL's driver directory.
func searchDirs() []string {
	var dirs []string
	for _, d := range strings.Split(os.Getenv(LibDirEnv), ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := os.Getenv(env); d != "" {
			dirs = append(dirs, filepath.Join(d, "lib64"))
		}
	}
	return append(dirs, "/usr/local/cuda/lib64", "/usr/lib/wsl/lib")
}

// candidates lists the paths tried for spec, in order: each soname in
// every search directory (only those that exist), then the bare soname for
// the dynamic loader's own search.
func (spec libSpec) candidates() []string {
	var out []string
	for _, dir := range searchDirs() {
		for _, so := range spec.sonames {
			p := filepath.Join(dir, so)
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
	}
	return append(out, spec.sonames...)
}

// openError is the error of a library none of whose candidates opened.
func (spec libSpec) openError(last error) error {
	return fmt.Errorf("%w: %s could not be opened (tried %s; last error: %v); %s, or name its directory in %s",
		ErrUnavailable, spec.what, strings.Join(spec.sonames, ", "), last, spec.hint, LibDirEnv)
}
