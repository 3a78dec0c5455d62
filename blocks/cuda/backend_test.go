package cuda

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// The backend is registered under its name, picks GPUs by `cuda:N`, and
// refuses other device arguments.
func TestLookup(t *testing.T) {
	b, err := blocks.LookupBackend("cuda")
	require.NoError(t, err)
	require.Equal(t, Name, b.Name())
	require.Equal(t, "cuda:0", b.(Backend).Device())
	require.Equal(t, swarm.DTypeF16, b.CacheDType())

	b, err = blocks.LookupBackend("cuda:3")
	require.NoError(t, err)
	require.Equal(t, "cuda:3", b.(Backend).Device())

	for _, bad := range []string{"cuda:x", "cuda:-1", "cuda:"} {
		_, err = blocks.LookupBackend(bad)
		require.ErrorIs(t, err, blocks.ErrArgument, bad)
		require.ErrorContains(t, err, "want cuda:N", bad)
	}
	_, err = blocks.LookupBackend("cpu:1")
	require.ErrorIs(t, err, blocks.ErrArgument)
	require.ErrorContains(t, err, `backend "cpu" has no devices`)
}

// Where the backend cannot run, --device auto falls back to the CPU and
// says why; where it can, auto chooses it.
func TestAuto(t *testing.T) {
	b, why := blocks.AutoBackend()
	if err := (Backend{}).Usable(); err != nil {
		require.ErrorIs(t, err, ErrUnavailable)
		require.Equal(t, blocks.CPUBackendName, b.Name())
		require.Contains(t, why, "cuda: "+err.Error())
		return
	}
	require.Equal(t, Name, b.Name())
}

// Without a GPU, building an engine fails with ErrUnavailable naming what
// is missing, and nothing else goes wrong on the way.
func TestNewEngineWithoutGPU(t *testing.T) {
	if (Backend{}).Usable() == nil {
		t.Skip("a GPU is usable here: `swarm doctor --device cuda` checks the engine")
	}
	c := synth.DefaultConfig()
	c.Layers, c.Dim, c.FFN, c.Heads, c.KVHeads = 2, 64, 96, 4, 2
	c.DType = swarm.DTypeF16
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, synth.WriteGGUF(path, c))
	m, err := blocks.Open(path)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.LoadSpanWith(New(0, t.TempDir()), swarm.Span{Start: 0, End: 2})
	require.ErrorIs(t, err, ErrUnavailable)
	_, err = (Backend{}).MemoryBytes()
	require.ErrorIs(t, err, ErrUnavailable)
	require.Contains(t, (Backend{}).Describe(), "cuda:0 unavailable")
	require.Empty(t, (Backend{}).Kernels(), "no kernels to advertise without a GPU")
}

// TestKernelsOf: what a GPU server advertises as its kernels names the
// compute capability, the products and the NVRTC version, and not the
// ordinal, memory or driver, so that equal GPUs on two hosts (or two GPUs
// of one host) advertise the same string.
func TestKernelsOf(t *testing.T) {
	h100 := Device{Ordinal: 0, Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0, TotalBytes: 80 << 30, DriverVersion: 12040}
	other := h100
	other.Ordinal, other.TotalBytes, other.DriverVersion = 3, 79<<30, 12080
	require.Equal(t, "cuda sm_90 mma nvrtc 12.4", kernelsOf(h100, "mma", "12.4"))
	require.Equal(t, kernelsOf(h100, "mma", "12.4"), kernelsOf(other, "mma", "12.4"))
	require.NotEqual(t, kernelsOf(h100, "mma", "12.4"), kernelsOf(h100, "matvec", "12.4"))
	require.NotEqual(t, kernelsOf(h100, "mma", "12.4"), kernelsOf(h100, "mma", "11.8"))
	a100 := h100
	a100.Major = 8
	require.NotEqual(t, kernelsOf(h100, "mma", "12.4"), kernelsOf(a100, "mma", "12.4"))
}

// SWARM_CUDA_GEMM: auto (or unset) takes the tensor-core kernels from
// compute capability 8.0 on and matvec before it; mma is refused before
// 8.0; an unknown value names the choices.
func TestProducts(t *testing.T) {
	ampere, turing := Device{Major: 8, Minor: 0}, Device{Ordinal: 1, Major: 7, Minor: 5}
	for _, c := range []struct {
		env  string
		dev  Device
		want string
		err  string
	}{
		{"", ampere, "mma", ""},
		{"auto", Device{Major: 9}, "mma", ""},
		{"", turing, "matvec", ""},
		{"matvec", ampere, "matvec", ""},
		{"cublas", turing, "cublas", ""},
		{"mma", ampere, "mma", ""},
		{"mma", turing, "", "SWARM_CUDA_GEMM=mma needs mma.sync m16n8k16 tensor cores (compute capability 8.0 or later), cuda:1 is 7.5"},
		{"MMA", ampere, "", `SWARM_CUDA_GEMM="MMA", want auto (the default), mma, matvec or cublas`},
	} {
		t.Setenv(gemmEnv, c.env)
		got, err := products(c.dev)
		if c.err != "" {
			require.ErrorIs(t, err, ErrUnavailable, c.env)
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err, c.env)
		require.Equal(t, c.want, got, "%q on %d.%d", c.env, c.dev.Major, c.dev.Minor)
	}
}
