package cuda

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// Name is the backend's name: `swarm serve --device cuda` (GPU 0) or
// `--device cuda:N`.
const Name = "cuda"

// Backend is the CUDA blocks.Backend for one GPU. Its engines keep the
// weights as fp16 and the attention caches as fp16 in device memory.
type Backend struct {
	ordinal  int
	cacheDir string
}

var _ blocks.Backend = Backend{}

func init() {
	if err := blocks.RegisterBackend(Backend{}); err != nil {
		panic(err)
	}
}

// New returns the backend of GPU ordinal, keeping compiled kernels under
// cacheDir ("" for DefaultCacheDir).
func New(ordinal int, cacheDir string) Backend {
	return Backend{ordinal: ordinal, cacheDir: cacheDir}
}

// Name is "cuda".
func (b Backend) Name() string { return Name }

// Device is the backend's device as `--device` names it ("cuda:0").
func (b Backend) Device() string { return Name + ":" + strconv.Itoa(b.ordinal) }

// WithDevice returns the backend of GPU N for arg "N" (`--device cuda:N`);
// other arguments give an error wrapping blocks.ErrArgument.
func (b Backend) WithDevice(arg string) (blocks.Backend, error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: device cuda:%s, want cuda:N with N a GPU index (0, 1, ...)", blocks.ErrArgument, arg)
	}
	return Backend{ordinal: n, cacheDir: b.cacheDir}, nil
}

// CacheDType is fp16: K and V are rounded to binary16 as they are stored.
func (Backend) CacheDType() swarm.DType { return swarm.DTypeF16 }

// ComputeDType is fp16: matrix products take fp16 weights and activations
// (float32 sums), so results differ from the CPU's float32 products
// (blocks/parity bounds the difference).
func (Backend) ComputeDType() swarm.DType { return swarm.DTypeF16 }

// Usable reports why the backend cannot run here (nil when it can): a
// CUDA library that cannot be opened, no GPU, or no GPU of this ordinal.
// It does not compile the kernels.
func (b Backend) Usable() error {
	// The driver first: without a GPU it fails fast, before cuBLAS (whose
	// libcublasLt alone maps half a gigabyte) is opened, and that only
	// with SWARM_CUDA_GEMM=cublas.
	devs, err := Devices()
	if err != nil {
		return err
	}
	if b.ordinal >= len(devs) {
		return fmt.Errorf("%w: cuda:%d, the driver sees %d GPU(s)", ErrUnavailable, b.ordinal, len(devs))
	}
	if _, err := loadNVRTC(); err != nil {
		return err
	}
	useBLAS, err := useCuBLAS()
	if err != nil || !useBLAS {
		return err
	}
	if _, err := loadCuBLAS(); err != nil {
		return fmt.Errorf("%s=cublas: %w", gemmEnv, err)
	}
	return nil
}

// Describe is the line a server logs at start: the GPU, its compute
// capability and memory, the libraries in use.
func (b Backend) Describe() string {
	devs, err := Devices()
	if err != nil || b.ordinal >= len(devs) {
		return fmt.Sprintf("cuda:%d unavailable: %v", b.ordinal, err)
	}
	d := devs[b.ordinal]
	n, _ := loadNVRTC()
	var bl *cublas
	if useBLAS, _ := useCuBLAS(); useBLAS {
		bl, _ = loadCuBLAS()
	}
	desc := fmt.Sprintf("cuda:%d %s sm_%d%d %d SMs %.1f GiB driver %d.%d", d.Ordinal, d.Name, d.Major, d.Minor, d.SMs,
		float64(d.TotalBytes)/(1<<30), d.DriverVersion/1000, d.DriverVersion%1000/10)
	if n != nil {
		desc += " nvrtc " + n.version() + " (" + n.lib.path + ")"
	}
	if bl != nil {
		desc += " products cublas (" + bl.lib.path + ")"
	} else if p, err := products(d); err == nil {
		desc += " products " + p
	}
	return desc
}

// Kernels names what decides a token's bits on this backend's GPU, for
// swarm.ServerInfo.Kernels: its compute capability, the matrix products
// (SWARM_CUDA_GEMM: mma, matvec or cublas) and the NVRTC that compiles
// kernels.cu, without the ordinal, memory or driver, which do not change
// them ("cuda sm_90 mma nvrtc 12.4"). Two servers with equal Kernels
// compute a session alike, so a failover replay between them is bit for
// bit. "" when the GPU is unavailable.
func (b Backend) Kernels() string {
	devs, err := Devices()
	if err != nil || b.ordinal >= len(devs) {
		return ""
	}
	d := devs[b.ordinal]
	p := "cublas"
	if useBLAS, _ := useCuBLAS(); !useBLAS {
		if p, err = products(d); err != nil {
			return ""
		}
	}
	v := "unknown"
	if n, err := loadNVRTC(); err == nil {
		v = n.version()
	}
	return kernelsOf(d, p, v)
}

// kernelsOf is Backend.Kernels for device d, products p and NVRTC version v.
func kernelsOf(d Device, p, v string) string {
	return fmt.Sprintf("cuda sm_%d%d %s nvrtc %s", d.Major, d.Minor, p, v)
}

// gpus keeps one opened gpu per ordinal and cache directory: engines of
// the same device share its context, module, stream and cuBLAS handle.
var (
	gpusMu sync.Mutex
	gpus   = map[Backend]*gpu{}
)

// gpu opens the backend's device once per process.
func (b Backend) gpu() (*gpu, error) {
	gpusMu.Lock()
	defer gpusMu.Unlock()
	if g := gpus[b]; g != nil {
		return g, nil
	}
	dir := b.cacheDir
	if dir == "" {
		dir = DefaultCacheDir()
	}
	g, _, err := openGPU(b.ordinal, ptxCache{dir: dir})
	if err != nil {
		return nil, err
	}
	gpus[b] = g
	return g, nil
}

// NewEngine uploads the span's weights to the GPU. Errors wrap
// ErrUnavailable (no library, no GPU), blocks.ErrFormat (a shape the
// kernels do not take, an unreadable tensor) or name the CUDA call that
// failed (out of device memory: cuMemAlloc).
func (b Backend) NewEngine(t blocks.SpanTensors) (blocks.Engine, error) {
	g, err := b.gpu()
	if err != nil {
		return nil, err
	}
	return newEngine(g, t, func(info swarm.ModelInfo) int64 { return blocks.CacheBytesPerToken(info, swarm.DTypeF16) })
}

// MemoryBytes is the GPU's free memory now, bytes: what `swarm serve`
// offers for weights and caches when --memory is not given.
func (b Backend) MemoryBytes() (int64, error) {
	g, err := b.gpu()
	if err != nil {
		return 0, err
	}
	var free uint64
	err = g.do(func() error {
		var e error
		free, _, e = g.memInfo()
		return e
	})
	return int64(free), err
}
