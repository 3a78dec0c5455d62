package blocks

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/swarmllm/swarm/swarm"
)

// The split of this package: format readers (gguf.go, hf.go, llama2c.go)
// turn a file into one Model — metadata plus a directory of tensors, parsed
// once; the architecture table (arch*.go) says what a block of each family
// holds and computes; a Backend builds an Engine from one span's tensors.
// The CPU backend (cpuBackend) is built in; others (the GPU issue's CUDA
// backend) register themselves with RegisterBackend and are chosen by name
// (`swarm serve --backend`).

// Slot names one tensor a block of any architecture may hold. An
// architecture lists the slots it has (archDesc.tensors); the others are
// absent (SpanTensors.Tensor reports ok = false). Shapes use ModelInfo's
// dimensions, row-major [rows, cols].
type Slot int

// Block tensor slots.
const (
	SlotAttnNorm     Slot = iota // [DModel] RMSNorm before attention
	SlotWQ                       // [NHeads*HeadDim, DModel]
	SlotWK                       // [NKVHeads*HeadDim, DModel]
	SlotWV                       // [NKVHeads*HeadDim, DModel]
	SlotWO                       // [DModel, NHeads*HeadDim]
	SlotBQ                       // [NHeads*HeadDim] q bias (Qwen2)
	SlotBK                       // [NKVHeads*HeadDim] k bias (Qwen2)
	SlotBV                       // [NKVHeads*HeadDim] v bias (Qwen2)
	SlotQNorm                    // [HeadDim] per-head RMSNorm of q before RoPE (Qwen3, Gemma 3)
	SlotKNorm                    // [HeadDim] per-head RMSNorm of k before RoPE (Qwen3, Gemma 3)
	SlotPostAttnNorm             // [DModel] RMSNorm of the attention output (Gemma 3)
	SlotFFNNorm                  // [DModel] RMSNorm before the feed-forward
	SlotW1                       // gate [FFNDim, DModel]
	SlotW2                       // down [DModel, FFNDim]
	SlotW3                       // up [FFNDim, DModel]
	SlotPostFFNNorm              // [DModel] RMSNorm of the feed-forward output (Gemma 3)
	NumSlots
)

// IsMatrix reports whether the slot holds a weight matrix (read with
// SpanTensors.ReadRows) rather than a vector (SpanTensors.Vector).
func (s Slot) IsMatrix() bool {
	switch s {
	case SlotWQ, SlotWK, SlotWV, SlotWO, SlotW1, SlotW2, SlotW3:
		return true
	}
	return false
}

// TensorInfo describes one block tensor of a span.
type TensorInfo struct {
	// Name is the tensor's name in its file, for error messages.
	Name string
	// DType is the stored element type (quantized types keep their blocks).
	DType swarm.DType
	// Rows and Cols are the shape [Rows, Cols]; a vector has Rows = 1.
	Rows, Cols int
}

// RowBytes is the stored bytes of one row.
func (t TensorInfo) RowBytes() int { return int(t.DType.Bytes(int64(t.Cols))) }

// Bytes is the stored bytes of the whole tensor.
func (t TensorInfo) Bytes() int64 { return t.DType.Bytes(int64(t.Rows) * int64(t.Cols)) }

// BlockConfig is what a block forward needs beyond ModelInfo: the
// architecture's per-model numbers, read from the file by its entry in the
// architecture table.
type BlockConfig struct {
	// AttnScale divides q·k: sqrt(HeadDim) unless the family says
	// otherwise (Gemma 3: sqrt(query_pre_attn_scalar)). 0 means sqrt(HeadDim).
	AttnScale float64
	// SlidingTheta is the RoPE base of sliding-window blocks (Gemma 3
	// rope_local_base_freq); 0 means ModelInfo.RopeTheta. Sliding blocks
	// use no RoPE scaling.
	SlidingTheta float64
	// Activation is the feed-forward gate non-linearity.
	Activation Activation
	// RopeFactors are GGUF rope_freqs [HeadDim/2] (Llama 3.1 long-context
	// frequency factors), or nil.
	RopeFactors []float32
}

// SpanTensors is the neutral tensor directory of one span of a model: what
// a Backend builds an engine from. Whatever the file format, q/k rows come
// in adjacent-pair RoPE order (the engine's), and RMSNorm weights as the
// scale itself (Gemma's stored w of a (1 + w) scale has its 1 added). Only
// the span's tensors can be read. Reads may be called concurrently.
type SpanTensors interface {
	// Info describes the whole model.
	Info() swarm.ModelInfo
	// Config is the architecture's block configuration.
	Config() BlockConfig
	// Span is the blocks whose tensors can be read.
	Span() swarm.Span
	// Tensor describes block b's tensor in slot; ok is false when the
	// block has none there (or b lies outside Span()).
	Tensor(b int, slot Slot) (t TensorInfo, ok bool)
	// ReadRows streams a matrix's stored bytes, little-endian, in row order:
	// fn gets consecutive chunks of whole rows, the first being row0, and
	// must not keep raw after returning. Errors wrap ErrFormat (an
	// unreadable file), ErrArgument (no such tensor) or ErrClosed.
	ReadRows(b int, slot Slot, fn func(row0 int, raw []byte) error) error
	// Vector reads a vector tensor widened to float32 [Rows*Cols], with the
	// same errors as ReadRows.
	Vector(b int, slot Slot) ([]float32, error)
}

// Backend builds engines for spans of a model. Implementations are safe
// for concurrent use.
type Backend interface {
	// Name is how `swarm serve --backend` selects it ("cpu").
	Name() string
	// CacheDType is the element type of the attention caches (K and V) its
	// engines keep: an engine's Info().CacheBytesPerToken is
	// 2 * NKVHeads * HeadDim * CacheDType.Bytes(1).
	CacheDType() swarm.DType
	// NewEngine reads the span's weights from t and returns an engine for
	// them. It returns errors wrapping ErrFormat for tensors it cannot use
	// (an unsupported dtype) and the read errors of t.
	NewEngine(t SpanTensors) (Engine, error)
}

var (
	backendsMu sync.RWMutex
	backends   = map[string]Backend{}
)

// RegisterBackend makes b selectable by its name. It returns an error
// wrapping ErrArgument when the name is empty or already taken.
func RegisterBackend(b Backend) error {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	name := b.Name()
	if name == "" {
		return fmt.Errorf("%w: backend with an empty name", ErrArgument)
	}
	if _, dup := backends[name]; dup {
		return fmt.Errorf("%w: backend %q registered twice", ErrArgument, name)
	}
	backends[name] = b
	return nil
}

// BackendNames lists the registered backends, sorted.
func BackendNames() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AutoBackendName picks a backend by what the machine has
// (AutoBackend): `swarm serve --device auto`.
const AutoBackendName = "auto"

// LookupBackend returns the backend registered as name; "" means the CPU
// backend and "auto" AutoBackend's choice. "NAME:ARG" (`--device cuda:1`)
// asks backend NAME for its device ARG, when the backend has a method
// WithDevice(string) (Backend, error). An unknown name gives an error
// wrapping ErrArgument that lists the registered ones.
func LookupBackend(name string) (Backend, error) {
	switch name {
	case "":
		name = CPUBackendName
	case AutoBackendName:
		b, _ := AutoBackend()
		return b, nil
	}
	base, arg, hasArg := strings.Cut(name, ":")
	backendsMu.RLock()
	b, ok := backends[base]
	backendsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: backend %q is not available (available: %s)", ErrArgument, name, strings.Join(BackendNames(), ", "))
	}
	if !hasArg {
		return b, nil
	}
	d, ok := b.(interface {
		WithDevice(string) (Backend, error)
	})
	if !ok {
		return nil, fmt.Errorf("%w: backend %q has no devices to choose from (give %q)", ErrArgument, base, base)
	}
	return d.WithDevice(arg)
}

// AutoBackend returns the first registered backend other than the CPU
// that says it can run here (a method Usable() error returning nil), else
// the CPU backend; why says what was chosen and why the others were not.
func AutoBackend() (b Backend, why string) {
	var reasons []string
	for _, name := range BackendNames() {
		if name == CPUBackendName {
			continue
		}
		backendsMu.RLock()
		cand := backends[name]
		backendsMu.RUnlock()
		u, ok := cand.(interface{ Usable() error })
		if !ok {
			continue
		}
		err := u.Usable()
		if err == nil {
			return cand, name + ": usable"
		}
		reasons = append(reasons, fmt.Sprintf("%s: %v", name, err))
	}
	why = "cpu"
	if len(reasons) > 0 {
		why += " (" + strings.Join(reasons, "; ") + ")"
	}
	return CPU(), why
}

// CacheBytesPerToken is the attention-cache bytes one block needs per token
// when K and V are kept as d: 2 * NKVHeads * HeadDim * d.Bytes(1) (paper
// 003 eq. 2's s_c is this times l^I_max + l_max).
func CacheBytesPerToken(info swarm.ModelInfo, d swarm.DType) int64 {
	return 2 * d.Bytes(int64(info.NKVHeads*info.HeadDim))
}
