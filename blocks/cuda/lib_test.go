package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// A library that is nowhere gives ErrUnavailable naming it, the sonames
// tried, how to install it and the directory variable.
func TestOpenMissingLibrary(t *testing.T) {
	spec := libSpec{what: "the test library", sonames: []string{"libswarm-nosuch.so.9"}, hint: "install swarm-nosuch"}
	_, err := open(spec)
	require.ErrorIs(t, err, ErrUnavailable)
	for _, s := range []string{"the test library", "libswarm-nosuch.so.9", "install swarm-nosuch", LibDirEnv} {
		require.Contains(t, err.Error(), s)
	}
}

// A directory in SWARM_CUDA_LIB_DIR is searched first: a file there that
// is not a shared library is tried, and the loader's own complaint about
// it reaches the error.
func TestOpenSearchesLibDir(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("dlopen is only used on linux")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "libswarm-fake.so.1"), []byte("not an ELF file"), 0o644))
	t.Setenv(LibDirEnv, "/nonexistent:"+dir)
	spec := libSpec{what: "the fake library", sonames: []string{"libswarm-fake.so.1"}, hint: "none"}
	require.Equal(t, []string{filepath.Join(dir, "libswarm-fake.so.1"), "libswarm-fake.so.1"}, spec.candidates())
	_, err := open(spec)
	require.ErrorIs(t, err, ErrUnavailable)
	require.Contains(t, err.Error(), "libswarm-fake.so.1")
	require.Contains(t, err.Error(), filepath.Join(dir, "libswarm-fake.so.1")+": file too short", "the loader's reason for the file found in %s", LibDirEnv)
}

// The CUDA driver, opened for real when installed: without a GPU, cuInit's
// own error comes back as ErrUnavailable; with one, the devices are
// described.
func TestDevices(t *testing.T) {
	devs, err := Devices()
	if err != nil {
		require.ErrorIs(t, err, ErrUnavailable)
		var ce *cudaError
		if errors.As(err, &ce) {
			require.Contains(t, err.Error(), "cuInit")
			require.Contains(t, err.Error(), "CUDA_ERROR_", "the driver names its error")
		} else {
			require.Contains(t, err.Error(), "CUDA driver")
		}
		t.Logf("no GPU: %v", err)
		return
	}
	require.NotEmpty(t, devs)
	for i, d := range devs {
		require.Equal(t, i, d.Ordinal)
		require.NotEmpty(t, d.Name)
		require.GreaterOrEqual(t, d.Major, 5)
		require.Positive(t, d.TotalBytes)
		t.Logf("%+v", d)
	}
}

// cuBLAS opened for real when installed: every symbol the engine binds
// exists in it.
func TestCuBLASSymbols(t *testing.T) {
	b, err := loadCuBLAS()
	if err != nil {
		require.ErrorIs(t, err, ErrUnavailable)
		t.Skipf("cuBLAS is not installed here (CI installs Debian's libcublas11): %v", err)
	}
	require.NotNil(t, b.cublasGemmEx)
	// Without a device, creating a handle fails with cuBLAS's own status.
	if _, derr := Devices(); derr != nil {
		var h uintptr
		err := b.check("cublasCreate", b.cublasCreate(&h))
		require.Error(t, err)
		require.Contains(t, err.Error(), "cublasCreate")
	}
}
