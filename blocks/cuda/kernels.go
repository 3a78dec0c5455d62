package cuda

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// kernelSource is the CUDA C of the engine's small kernels (kernels.cu).
//
//go:embed kernels.cu
var kernelSource string

// kernelNames are the kernels of kernelSource the engine launches, in the
// order of the kernel enum below.
var kernelNames = [numKernels]string{
	kRMSNorm: "rmsnorm", kAddBias: "add_bias", kRoPE: "rope", kStoreKV: "store_kv", kAttention: "attention",
	kGLU: "glu", kToF16: "to_f16", kAdd: "add", kF16ToF32: "f16_to_f32",
	kMatvec1: "matvec_1", kMatvec4: "matvec_4", kMatvec16: "matvec_16",
	kMMA8: "mma_8", kMMA16: "mma_16", kMMA64: "mma_64",
}

// kernel indexes kernelNames.
type kernel int

const (
	kRMSNorm kernel = iota
	kAddBias
	kRoPE
	kStoreKV
	kAttention
	kGLU
	kToF16
	kAdd
	kF16ToF32
	kMatvec1
	kMatvec4
	kMatvec16
	kMMA8
	kMMA16
	kMMA64
	numKernels
)

// CacheDirEnv names the environment variable that moves the PTX cache
// (default: the user's cache directory, ~/.cache/swarm/cuda).
const CacheDirEnv = "SWARM_CUDA_CACHE"

// DefaultCacheDir is where compiled kernels are kept: $SWARM_CUDA_CACHE,
// else swarm/cuda under os.UserCacheDir, else under the temporary
// directory.
func DefaultCacheDir() string {
	if d := os.Getenv(CacheDirEnv); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "swarm", "cuda")
	}
	return filepath.Join(os.TempDir(), "swarm-cuda")
}

// ptxCache keeps compiled kernels on disk, one file per source, target
// architecture, NVRTC version and option set (the key hashes them all), so
// a server compiles once per GPU architecture and toolkit.
type ptxCache struct {
	dir string
}

// path is the file of the PTX for arch compiled by NVRTC version.
func (c ptxCache) path(arch, version string) string {
	h := sha256.New()
	for _, s := range []string{kernelSource, arch, version, strings.Join(compileOptions, " ")} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return filepath.Join(c.dir, fmt.Sprintf("kernels-%s-%s.ptx", arch, hex.EncodeToString(h.Sum(nil))[:16]))
}

// validPTX reports whether ptx looks like a whole compile of kernelSource:
// NUL-terminated, with an entry for every kernel.
func validPTX(ptx []byte) bool {
	if len(ptx) == 0 || ptx[len(ptx)-1] != 0 {
		return false
	}
	s := string(ptx)
	for _, name := range kernelNames {
		if !strings.Contains(s, ".entry "+name+"(") {
			return false
		}
	}
	return true
}

// kernelsPTX returns the PTX of kernelSource for arch: from the cache when
// a valid file is there (cached = true), else compiled by n and stored
// (atomically: a temporary file renamed into place, so concurrent servers
// never read half a file). A cache that cannot be written is not an error:
// the PTX is still returned, and storeErr says why it was not kept.
func kernelsPTX(n *nvrtc, c ptxCache, arch string) (ptx []byte, cached bool, storeErr, err error) {
	p := c.path(arch, n.version())
	if b, rerr := os.ReadFile(p); rerr == nil && validPTX(b) {
		return b, true, nil, nil
	}
	ptx, err = n.compile(kernelSource, "kernels.cu", arch)
	if err != nil {
		return nil, false, nil, err
	}
	if !validPTX(ptx) {
		return nil, false, nil, fmt.Errorf("cuda: NVRTC's PTX for %s lacks a kernel of %v", arch, kernelNames)
	}
	return ptx, false, c.store(p, ptx), nil
}

// store writes ptx to p through a temporary file in the same directory.
func (c ptxCache) store(p string, ptx []byte) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("cuda: PTX cache: %w", err)
	}
	f, err := os.CreateTemp(c.dir, ".kernels-*.tmp")
	if err != nil {
		return fmt.Errorf("cuda: PTX cache: %w", err)
	}
	_, werr := f.Write(ptx)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), p)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cuda: PTX cache: %w", werr)
	}
	return nil
}
