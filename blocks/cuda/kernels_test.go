package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// nvrtcOrSkip returns NVRTC, or skips naming the missing library (CI
// installs Debian's libnvrtc11.2; no GPU is needed to compile).
func nvrtcOrSkip(t *testing.T) *nvrtc {
	t.Helper()
	n, err := loadNVRTC()
	if err != nil {
		require.ErrorIs(t, err, ErrUnavailable)
		t.Skipf("NVRTC is not installed here: %v", err)
	}
	return n
}

// segTable is laid out as kernels.cu's sw_segs: arrays of 64-bit pointers,
// then of 32-bit ints, then the count, padded to 8 bytes, with the same
// SW_MAX_SEGS.
func TestSegTableMatchesSource(t *testing.T) {
	require.Contains(t, kernelSource, fmt.Sprintf("#define SW_MAX_SEGS %d\n", maxSegs))
	var st segTable
	require.Equal(t, uintptr(2*8*maxSegs+4*4*maxSegs+8), unsafe.Sizeof(st))
	require.Equal(t, uintptr(8*maxSegs), unsafe.Offsetof(st.vc))
	require.Equal(t, uintptr(16*maxSegs), unsafe.Offsetof(st.pos))
	require.Equal(t, uintptr(20*maxSegs), unsafe.Offsetof(st.off))
	require.Equal(t, uintptr(24*maxSegs), unsafe.Offsetof(st.n))
	require.Equal(t, uintptr(28*maxSegs), unsafe.Offsetof(st.ring))
	require.Equal(t, uintptr(32*maxSegs), unsafe.Offsetof(st.count))
	re := regexp.MustCompile(`struct sw_segs \{\s*unsigned long long kc\[SW_MAX_SEGS\];\s*unsigned long long vc\[SW_MAX_SEGS\];\s*` +
		`int pos\[SW_MAX_SEGS\];\s*int off\[SW_MAX_SEGS\];\s*int n\[SW_MAX_SEGS\];\s*int ring\[SW_MAX_SEGS\];\s*int count;\s*\};`)
	require.Regexp(t, re, kernelSource)
}

// The kernels the engine launches are exactly the kernels of the source.
func TestKernelNamesMatchSource(t *testing.T) {
	re := regexp.MustCompile(`extern "C" __global__ void\s+(\w+)\s*\(`)
	var inSource []string
	for _, m := range re.FindAllStringSubmatch(kernelSource, -1) {
		inSource = append(inSource, m[1])
	}
	names := slices.Clone(kernelNames[:])
	slices.Sort(names)
	slices.Sort(inSource)
	require.Equal(t, names, inSource)
	require.NotContains(t, kernelSource, "#include", "NVRTC 11 has no built-in headers")
}

// NVRTC compiles the embedded source for Ampere and Hopper without a
// warning, and the PTX has every kernel under its own name.
func TestKernelsCompile(t *testing.T) {
	n := nvrtcOrSkip(t)
	t.Logf("NVRTC %s (%s)", n.version(), n.lib.path)
	for _, arch := range []string{"compute_80", "compute_90"} {
		t.Run(arch, func(t *testing.T) {
			ptx, err := n.compile(kernelSource, "kernels.cu", arch)
			require.NoError(t, err)
			require.True(t, validPTX(ptx))
			require.Contains(t, string(ptx), ".target sm_"+strings.TrimPrefix(arch, "compute_"))
			entries := ptxEntries(string(ptx))
			require.Len(t, entries, int(numKernels))
			for name, body := range entries {
				if strings.HasPrefix(name, "matvec_") {
					require.Contains(t, body, "fma.rn.f32", "%s: the matvec sums are written as fmaf", name)
					continue
				}
				if strings.HasPrefix(name, "mma_") {
					require.Contains(t, body, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "%s: tensor-core tiles", name)
				}
				require.NotContains(t, body, "fma.rn.f32", "%s: --fmad=false, so no multiply-add is contracted", name)
			}
		})
	}
	// The check above can fail: with contraction allowed, NVRTC fuses the
	// sums of squares of rmsnorm.
	t.Run("fmad=true", func(t *testing.T) {
		saved := compileOptions
		t.Cleanup(func() { compileOptions = saved })
		compileOptions = []string{"--fmad=true", "--std=c++14"}
		ptx, err := n.compile(kernelSource, "kernels.cu", "compute_90")
		require.NoError(t, err)
		require.Contains(t, ptxEntries(string(ptx))["rmsnorm"], "fma.rn.f32")
	})
}

// ptxEntries returns the PTX body of each kernel (.entry) by name.
func ptxEntries(ptx string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)\.entry (\w+)\((.*?)\n}\n`).FindAllStringSubmatch(ptx, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// A source NVRTC refuses gives a CompileError with the compiler's log,
// which names the offending identifier.
func TestCompileErrorCarriesLog(t *testing.T) {
	n := nvrtcOrSkip(t)
	_, err := n.compile("extern \"C\" __global__ void k(float* x) { x[0] = undefined_value; }\n", "broken.cu", "compute_80")
	var ce *CompileError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, "compute_80", ce.Arch)
	require.Contains(t, ce.Log, "undefined_value")
	require.Contains(t, err.Error(), "NVRTC_ERROR_COMPILATION")
}

// The PTX cache: a first call compiles and stores, a second reads the same
// bytes back, a damaged file is recompiled, and a cache that cannot be
// written still gives the PTX (with the reason).
func TestPTXCache(t *testing.T) {
	n := nvrtcOrSkip(t)
	c := ptxCache{dir: filepath.Join(t.TempDir(), "cache")}
	ptx, cached, storeErr, err := kernelsPTX(n, c, "compute_80")
	require.NoError(t, err)
	require.NoError(t, storeErr)
	require.False(t, cached)
	p := c.path("compute_80", n.version())
	onDisk, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, ptx, onDisk)

	again, cached, _, err := kernelsPTX(n, c, "compute_80")
	require.NoError(t, err)
	require.True(t, cached)
	require.Equal(t, ptx, again)

	require.NotEqual(t, p, c.path("compute_90", n.version()), "one file per architecture")
	require.NotEqual(t, p, c.path("compute_80", "0.0"), "one file per NVRTC version")

	require.NoError(t, os.WriteFile(p, ptx[:len(ptx)/2], 0o644))
	fixed, cached, _, err := kernelsPTX(n, c, "compute_80")
	require.NoError(t, err)
	require.False(t, cached, "half a file is compiled anew")
	require.Equal(t, ptx, fixed)

	blocked := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocked, nil, 0o644))
	got, cached, storeErr, err := kernelsPTX(n, ptxCache{dir: filepath.Join(blocked, "sub")}, "compute_80")
	require.NoError(t, err)
	require.False(t, cached)
	require.Equal(t, ptx, got)
	require.ErrorContains(t, storeErr, "PTX cache")
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv(CacheDirEnv, "/somewhere/else")
	require.Equal(t, "/somewhere/else", DefaultCacheDir())
	t.Setenv(CacheDirEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	require.Equal(t, "/xdg/swarm/cuda", DefaultCacheDir())
}
