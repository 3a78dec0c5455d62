package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// ErrBadConfig is returned (wrapped) when a simulation parameter is out of
// range; the message names the parameter and what is expected.
var ErrBadConfig = errors.New("sim: bad config")

// ModelSpec is what the simulator needs to know about the model.
type ModelSpec struct {
	// Name is for tables ("BLOOM-176B").
	Name string `json:"name"`
	// Blocks is L.
	Blocks int `json:"blocks"`
	// BlockBytes is s_m, the bytes of one block's weights (eq. 2).
	BlockBytes int64 `json:"block_bytes"`
	// CacheBytesPerToken is the attention-cache bytes of one block for one
	// token of one session: 2 * d_model * dtype_bytes for models without GQA
	// (paper 003 Sec. 2.2), so s_c = CacheBytesPerToken * (lI + l_max).
	CacheBytesPerToken int64 `json:"cache_bytes_per_token"`
	// SlidingWindow and SlidingPattern describe sliding-window blocks as in
	// swarm.ModelInfo (Gemma 3: a window in tokens, and every
	// SlidingPattern-th block global): those blocks hold only
	// swarm.ModelInfo.CacheTokens positions of cache. 0 for none.
	SlidingWindow  int `json:"sliding_window,omitempty"`
	SlidingPattern int `json:"sliding_pattern,omitempty"`
}

// CacheBytes returns s_c for sessions of lI input and lMax output tokens:
// a global block's (every block's without sliding windows).
func (m ModelSpec) CacheBytes(lI, lMax int) int64 {
	return m.CacheBytesPerToken * int64(lI+lMax)
}

// BlockCacheBytes returns s_c(b) of every block for sessions of lI input
// and lMax output tokens (swarm.ModelInfo.BlockCacheBytes), [Blocks]; nil
// without sliding windows (one s_c for every block).
func (m ModelSpec) BlockCacheBytes(lI, lMax int) []int64 {
	if m.SlidingWindow <= 0 {
		return nil
	}
	info := swarm.ModelInfo{CacheBytesPerToken: m.CacheBytesPerToken, SlidingWindow: m.SlidingWindow, SlidingPattern: m.SlidingPattern}
	out := make([]int64, m.Blocks)
	for b := range out {
		out[b] = info.BlockCacheBytes(b, lI+lMax)
	}
	return out
}

// BLOOM176B returns the model of paper 003's evaluation: BLOOM-176B with
// 4-bit (nf4, 4.25 bits per parameter) weights: L = 70 blocks of
// 2,466,437,120 parameters, s_m = 2466437120 * 4.25/8 * 1.01 bytes
// (~1.3234 GB; the authors' simulator adds 1% for quantization state),
// d_model = 14336 and a 2-byte attention cache, so 57,344 cache bytes per
// block per token.
func BLOOM176B() ModelSpec {
	const params = 2_466_437_120
	return ModelSpec{
		Name:               "BLOOM-176B",
		Blocks:             70,
		BlockBytes:         params * 425 / 800 * 101 / 100, // 4.25/8 bytes, +1%, floored
		CacheBytesPerToken: 2 * 14336 * 2,
	}
}

// Hardware is a class of server: its speed, memory and, for the PETALS
// placement heuristic, its measured throughput.
type Hardware struct {
	// Kind names the class ("A100", "MIG").
	Kind string `json:"kind"`
	// Tau is tau_j, the decode time per block per token, in seconds.
	Tau float64 `json:"tau"`
	// TauI is the prefill time per block as a linear fit in the input
	// length, tauI_j(lI) (seconds).
	TauI swarm.PrefillFit `json:"tau_i"`
	// MemoryBytes is M_j, the memory for blocks and attention caches.
	MemoryBytes int64 `json:"memory_bytes"`
	// MaxBlocks caps the blocks the server may host (0: no cap).
	MaxBlocks int `json:"max_blocks,omitempty"`
	// ForwardRPS and NetworkRPS are PETALS' measured throughputs (requests
	// per second) that its placement heuristic ranks blocks by.
	ForwardRPS float64 `json:"forward_rps"`
	NetworkRPS float64 `json:"network_rps"`
	// TauBatch is the decode time per block of one batched step by batch
	// size (swarm.ServerInfo.TauBatch), used by ServerBatched only; nil
	// means a batch of any size takes as long as one step
	// (swarm.BatchFactor = 1).
	TauBatch []swarm.BatchTau `json:"tau_batch,omitempty"`
}

// A100 returns the high-performance server of paper 003 (an A100 80 GB
// serving BLOOM-176B in 4 bits, numbers from issue 6 and the authors'
// simulator): tau = 3.2197 ms, tauI(lI) = 0.0743 lI + 32.99 ms, M = 86.13 GB.
// Its PETALS throughputs are the authors' measured profile
// (throughput_v5.json: forward 20829.38 rps, network 3020.37 rps).
//
// These are the values of the authors' topology scripts
// (General_varying_*_online.m). Their clustered runs (Table 4, the
// realnet = 0 branch of test_general_case_online.m) use tau = 2.2197 ms,
// tauI = tau + 5 ms and M = 79.14 GB instead, which is most of why Table
// C.8's MATLAB remaining-token times are lower than ours (see
// matlab_branch_test.go); we keep the measured 3.2197 ms.
func A100() Hardware {
	return Hardware{
		Kind:        "A100",
		Tau:         3.2197e-3,
		TauI:        swarm.PrefillFit{Intercept: 32.99e-3, Slope: 0.0743e-3},
		MemoryBytes: 86_130_000_000,
		ForwardRPS:  20829.38146541331,
		NetworkRPS:  3020.3700586885343,
	}
}

// MIG returns the low-performance server of paper 003 (an A100 MIG 1g.10gb
// slice): tau = 16.2488 ms, tauI(lI) = 0.1041 lI + 206.35 ms, M = 9.1 GB,
// at most 4 blocks (the authors' simulator caps MIG slices at 4). PETALS
// throughputs from throughput_v5.json: forward 2757.72 rps, network
// 3138.10 rps.
func MIG() Hardware {
	return Hardware{
		Kind:        "MIG",
		Tau:         16.2488e-3,
		TauI:        swarm.PrefillFit{Intercept: 206.35e-3, Slope: 0.1041e-3},
		MemoryBytes: 9_100_000_000,
		MaxBlocks:   4,
		ForwardRPS:  2757.7243405599083,
		NetworkRPS:  3138.1039624670034,
	}
}

// Overheads are the client<->server communication costs on top of the
// network round trip time (paper 003 Sec. 2.2 t_cj and tI_cj): serialization,
// transfer of the hidden states in both directions, protocol work.
type Overheads struct {
	// PerToken is added to the RTT for one decode step: t_cj = RTT + PerToken.
	PerToken float64 `json:"per_token"`
	// Prefill is added to the RTT for the input: tI_cj(lI) = RTT + Prefill.At(lI).
	Prefill swarm.PrefillFit `json:"prefill"`
}

// PaperOverheads returns issue 6's values from the authors' simulator:
// 100 ms per token and 0.7049 lI + 67 ms per input (overhead_delay and
// overhead_delay_input of its topology scripts; its clustered branch uses
// 50 ms and 55 ms, see A100).
func PaperOverheads() Overheads {
	return Overheads{PerToken: 0.100, Prefill: swarm.PrefillFit{Intercept: 0.067, Slope: 0.7049e-3}}
}

// PetalsConfig holds the constants of the PETALS baseline.
type PetalsConfig struct {
	// CacheTokens is the attention-cache budget PETALS reserves per hosted
	// block, in tokens (4096 for models without GQA; petals.server.server).
	CacheTokens int `json:"cache_tokens"`
	// ReservedBytes is the memory PETALS keeps aside when choosing its block
	// count (2 GiB "autograd memory" for BLOOM-176B).
	ReservedBytes int64 `json:"reserved_bytes"`
	// HopOverhead and AllocPenalty are the PETALS routing constants (seconds):
	// serialization overhead per edge and the penalty for a server without
	// free cache (routing.DefaultPetalsParams).
	HopOverhead  float64 `json:"hop_overhead"`
	AllocPenalty float64 `json:"alloc_penalty"`
	// MinBackoff and MaxBackoff bound the client's retry delays when a server
	// has no cache room: MinBackoff * 2^(n-1) capped at MaxBackoff before the
	// (n+1)-th attempt (petals.client: 1 s .. 60 s).
	MinBackoff float64 `json:"min_backoff"`
	MaxBackoff float64 `json:"max_backoff"`
	// SessionTokens is the attention-cache length, in tokens, that a PETALS
	// client session reserves on every block it uses (its max_length); 0
	// reserves exactly lI + l_max, as the paper's model does. The servers'
	// cache slots of the PETALS placements (petals, opt-order and opt-rr)
	// are counted in sessions of this length, so a larger value admits
	// fewer concurrent PETALS sessions (issue 16: 512 instead of 148).
	SessionTokens int `json:"session_tokens,omitempty"`
}

// DefaultPetalsConfig returns PETALS' defaults: 4096 cache tokens per block,
// 2 GiB reserve, 18 ms per hop, 10 s allocation penalty, back-off 1 s..60 s.
func DefaultPetalsConfig() PetalsConfig {
	return PetalsConfig{
		CacheTokens:   4096,
		ReservedBytes: 2 << 30,
		HopOverhead:   0.018,
		AllocPenalty:  10,
		MinBackoff:    1,
		MaxBackoff:    60,
	}
}

// Workload is the stream of sessions from the client.
type Workload struct {
	// Rate is lambda, the Poisson arrival rate in sessions per second.
	Rate float64 `json:"rate"`
	// Requests is N_R, the number of sessions.
	Requests int `json:"requests"`
	// InputTokens is lI, the prompt length of every session.
	InputTokens int `json:"input_tokens"`
	// OutputTokens is l_max, the tokens every session generates (>= 1).
	OutputTokens int `json:"output_tokens"`
}

// Validate checks the workload; errors wrap ErrBadConfig.
func (w Workload) Validate() error {
	switch {
	case math.IsNaN(w.Rate) || math.IsInf(w.Rate, 0) || w.Rate <= 0:
		return fmt.Errorf("%w: arrival rate %g sessions/s, want a finite value > 0", ErrBadConfig, w.Rate)
	case w.Requests < 1:
		return fmt.Errorf("%w: %d requests, want >= 1", ErrBadConfig, w.Requests)
	case w.InputTokens < 0:
		return fmt.Errorf("%w: %d input tokens, want >= 0", ErrBadConfig, w.InputTokens)
	case w.OutputTokens < 1:
		return fmt.Errorf("%w: %d output tokens, want >= 1", ErrBadConfig, w.OutputTokens)
	}
	return nil
}
