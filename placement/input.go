package placement

import (
	"errors"
	"fmt"
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// Sentinel errors. Callers branch on them with errors.Is; the wrapped
// messages name the offending field or the shortfall.
var (
	// ErrBadInput is returned (wrapped) when an Input field is out of range.
	ErrBadInput = errors.New("placement: bad input")
	// ErrInfeasible is returned (wrapped, as *InfeasibleError) when the
	// servers cannot host every block for the target number of sessions:
	// condition (18) of paper 003 fails.
	ErrInfeasible = errors.New("placement: infeasible")
	// ErrTooLarge is returned by Optimal when the exhaustive search would
	// visit more states than its limit.
	ErrTooLarge = errors.New("placement: instance too large for exhaustive search")
	// ErrUnknownAlgorithm is returned by Lookup for a name not in Algorithms.
	ErrUnknownAlgorithm = errors.New("placement: unknown algorithm")
)

// InfeasibleError says why a placement cannot cover the model: the servers
// can hold Have blocks in total (sum over j of m_j, eq. 18) but the model has
// Need = L blocks, or (Uncovered >= 0) block Uncovered is hosted by nobody.
type InfeasibleError struct {
	// Sessions is the target number of concurrent sessions R used.
	Sessions int
	// Need is L, the number of blocks of the model.
	Need int
	// Have is the sum over servers of the blocks each can host (eq. 18 LHS).
	Have int
	// Uncovered is the first 0-based block no server hosts, or -1.
	Uncovered int
}

func (e *InfeasibleError) Error() string {
	if e.Have < e.Need {
		return fmt.Sprintf("%v: with R = %d sessions the servers hold %d blocks in total, the model has %d (eq. 18); lower R or add memory",
			ErrInfeasible, e.Sessions, e.Have, e.Need)
	}
	return fmt.Sprintf("%v: block %d is hosted by no server (R = %d)", ErrInfeasible, e.Uncovered, e.Sessions)
}

// Unwrap makes errors.Is(err, ErrInfeasible) true.
func (e *InfeasibleError) Unwrap() error { return ErrInfeasible }

// Model is what placement needs to know about the model (paper 003 Sec. 2.2).
type Model struct {
	// Blocks is L, the number of transformer blocks.
	Blocks int `json:"blocks"`
	// BlockBytes is s_m, the bytes of one block's weights.
	BlockBytes int64 `json:"block_bytes"`
	// CacheBytes is s_c, the attention-cache bytes one block needs for one
	// session of l^I_max + l_max tokens (eq. 2).
	CacheBytes int64 `json:"cache_bytes_per_block"`
	// BlockCacheBytes, when not nil, is s_c(b) for every block b [Blocks],
	// in bytes: eq. (2) with an attention-cache size per block, for a model
	// whose sliding-window blocks hold only their window
	// (swarm.ModelInfo.BlockCacheBytes). Each is in [1, CacheBytes], and
	// CacheBytes is then the largest, a global block's. nil means CacheBytes
	// for every block. Formulas that count m blocks without knowing which
	// count the m consecutive blocks that need the most (WindowCacheBytes).
	BlockCacheBytes []int64 `json:"block_cache_bytes,omitempty"`
}

// Server is one server as placement sees it. RTT and RTTPrefill are indexed
// by client, in the order of Input.Clients.
type Server struct {
	// Name identifies the server in plans and errors.
	Name string `json:"name"`
	// MemoryBytes is M_j, the effective memory for blocks and attention
	// caches, in bytes.
	MemoryBytes int64 `json:"memory_bytes"`
	// Tau is tau_j, the decode time per block per token, in seconds.
	Tau float64 `json:"tau"`
	// RTT is t_cj, the per-token round trip time to each client, in seconds.
	RTT []float64 `json:"rtt"`
	// MaxBlocks caps the blocks this server may host (0: no cap). The
	// paper's simulator caps MIG slices at 4 blocks; the paper's equations
	// have no such cap, so every formula here applies min(., MaxBlocks)
	// next to its min(., L).
	MaxBlocks int `json:"max_blocks,omitempty"`
	// TauPrefill is tau^I_j(l^I_max), the prefill time per block for a whole
	// input, in seconds; 0 when unknown. Used only by the all-tokens cost (8).
	TauPrefill float64 `json:"tau_prefill,omitempty"`
	// RTTPrefill is t^I_cj(l^I_max), the per-input round trip time to each
	// client, in seconds; nil when unknown.
	RTTPrefill []float64 `json:"rtt_prefill,omitempty"`
	// ForwardRPS is the PETALS throughput measure of one block (requests per
	// second through one block); 0 means 1/Tau. Used only by PETALS.
	ForwardRPS float64 `json:"forward_rps,omitempty"`
	// NetworkRPS is the PETALS network throughput (requests per second);
	// 0 means unlimited. Used only by PETALS.
	NetworkRPS float64 `json:"network_rps,omitempty"`
}

// PetalsParams are the constants of PETALS' own block-count rule
// (petals.server.server._choose_num_blocks): a FIXED attention-cache budget
// per hosted block and a fixed reserve, independent of the load.
type PetalsParams struct {
	// CacheBytesPerBlock is the attention-cache budget reserved per hosted
	// block, in bytes. PETALS uses 2 * d_model * 4096 tokens * 2 bytes
	// (234881024 for BLOOM-176B). 0 means CacheBytes (one session).
	CacheBytesPerBlock int64 `json:"cache_bytes_per_block,omitempty"`
	// ReservedBytes is memory PETALS keeps aside (2 GiB "autograd memory"
	// for BLOOM-176B), in bytes.
	ReservedBytes int64 `json:"reserved_bytes,omitempty"`
}

// Input is the snapshot every placement algorithm takes.
type Input struct {
	// Model is the model being placed.
	Model Model
	// Servers are the candidate servers; plans refer to them by index.
	Servers []Server
	// Clients names the clients; every Server.RTT has one entry per client.
	Clients []string
	// Sessions is R (|R| in the paper): the number of concurrent sessions
	// the placement must guarantee to serve (Sec. 3.3.1). At least 1.
	Sessions int
	// Demand is |R_c|, the sessions per client, used by Optimal and
	// LowerBound; nil splits Sessions evenly over the clients (the first
	// clients get the remainder).
	Demand []int
	// Petals configures the PETALS baselines.
	Petals PetalsParams
	// Order is the arrival order of servers for the PETALS baselines
	// (indices into Servers); nil means index order.
	Order []int
}

// Plan is a placement: one span per server, in the order of Input.Servers.
type Plan struct {
	// Algorithm names the algorithm that produced the plan.
	Algorithm string
	// Spans holds each server's hosted blocks; an empty span ({0,0}) means
	// the server hosts nothing.
	Spans []swarm.Span
	// Capacity is f_j (eq. 15): the sessions server j can hold concurrently
	// when every one of them uses all its blocks; 0 for an empty span.
	Capacity []int
	// CacheSlots is the number of block attention caches (block-sessions)
	// server j can hold under this plan, the capacity term of the waiting
	// time (20): floor((M_j - s_m m_j) / s_c), or floor(m_j B / s_c) for the
	// PETALS baselines with their fixed per-block budget B.
	CacheSlots []int
	// Amortized is t~_j (eq. 14) in seconds per block; 0 for an empty span.
	Amortized []float64
	// Order lists the server indices in the order they were placed.
	Order []int
	// Sessions is R, the target the plan was made for.
	Sessions int
}

// Blocks returns m_j for server j.
func (p Plan) Blocks(j int) int { return p.Spans[j].Len() }

// Validate checks every field and returns an error wrapping ErrBadInput
// that names the first bad one.
func (in Input) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, args...))
	}
	switch {
	case in.Model.Blocks <= 0:
		return bad("model.blocks = %d, want > 0", in.Model.Blocks)
	case in.Model.BlockBytes <= 0:
		return bad("model.block_bytes = %d, want > 0", in.Model.BlockBytes)
	case in.Model.CacheBytes <= 0:
		return bad("model.cache_bytes_per_block = %d, want > 0", in.Model.CacheBytes)
	case in.Model.BlockCacheBytes != nil && len(in.Model.BlockCacheBytes) != in.Model.Blocks:
		return bad("model.block_cache_bytes has %d entries, want one per block (%d)", len(in.Model.BlockCacheBytes), in.Model.Blocks)
	case in.Sessions < 1:
		return bad("target sessions R = %d, want >= 1", in.Sessions)
	case len(in.Servers) == 0:
		return bad("no servers")
	case len(in.Clients) == 0:
		return bad("no clients")
	case in.Petals.CacheBytesPerBlock < 0:
		return bad("petals.cache_bytes_per_block = %d, want >= 0", in.Petals.CacheBytesPerBlock)
	case in.Petals.ReservedBytes < 0:
		return bad("petals.reserved_bytes = %d, want >= 0", in.Petals.ReservedBytes)
	}
	for b, c := range in.Model.BlockCacheBytes {
		if c < 1 || c > in.Model.CacheBytes {
			return bad("model.block_cache_bytes[%d] = %d, want 1..cache_bytes_per_block (%d)", b, c, in.Model.CacheBytes)
		}
	}
	nc := len(in.Clients)
	for j, s := range in.Servers {
		if err := checkServer(j, s, nc); err != nil {
			return bad("%s", err)
		}
	}
	if in.Demand != nil {
		if len(in.Demand) != nc {
			return bad("demand has %d entries, want one per client (%d)", len(in.Demand), nc)
		}
		sum := 0
		for c, d := range in.Demand {
			if d < 0 {
				return bad("demand[%d] = %d, want >= 0", c, d)
			}
			sum += d
		}
		if sum != in.Sessions {
			return bad("demand sums to %d sessions, want R = %d", sum, in.Sessions)
		}
	}
	if in.Order != nil {
		if len(in.Order) != len(in.Servers) {
			return bad("order has %d entries, want one per server (%d)", len(in.Order), len(in.Servers))
		}
		seen := make([]bool, len(in.Servers))
		for _, j := range in.Order {
			if j < 0 || j >= len(in.Servers) || seen[j] {
				return bad("order %v is not a permutation of 0..%d", in.Order, len(in.Servers)-1)
			}
			seen[j] = true
		}
	}
	return nil
}

func checkServer(j int, s Server, nc int) error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	switch {
	case s.MemoryBytes < 0:
		return fmt.Errorf("servers[%d] (%s).memory_bytes = %d, want >= 0", j, s.Name, s.MemoryBytes)
	case !finite(s.Tau):
		return fmt.Errorf("servers[%d] (%s).tau = %g, want a finite number of seconds >= 0", j, s.Name, s.Tau)
	case len(s.RTT) != nc:
		return fmt.Errorf("servers[%d] (%s).rtt has %d entries, want one per client (%d)", j, s.Name, len(s.RTT), nc)
	case s.MaxBlocks < 0:
		return fmt.Errorf("servers[%d] (%s).max_blocks = %d, want >= 0 (0: no cap)", j, s.Name, s.MaxBlocks)
	case !finite(s.TauPrefill):
		return fmt.Errorf("servers[%d] (%s).tau_prefill = %g, want a finite number of seconds >= 0", j, s.Name, s.TauPrefill)
	case s.RTTPrefill != nil && len(s.RTTPrefill) != nc:
		return fmt.Errorf("servers[%d] (%s).rtt_prefill has %d entries, want one per client (%d)", j, s.Name, len(s.RTTPrefill), nc)
	case !finite(s.ForwardRPS):
		return fmt.Errorf("servers[%d] (%s).forward_rps = %g, want >= 0", j, s.Name, s.ForwardRPS)
	case !finite(s.NetworkRPS):
		return fmt.Errorf("servers[%d] (%s).network_rps = %g, want >= 0", j, s.Name, s.NetworkRPS)
	}
	for c, v := range s.RTT {
		if !finite(v) {
			return fmt.Errorf("servers[%d] (%s).rtt[%d] = %g, want a finite number of seconds >= 0", j, s.Name, c, v)
		}
	}
	for c, v := range s.RTTPrefill {
		if !finite(v) {
			return fmt.Errorf("servers[%d] (%s).rtt_prefill[%d] = %g, want a finite number of seconds >= 0", j, s.Name, c, v)
		}
	}
	return nil
}

// demand returns |R_c| per client: Input.Demand, or R split evenly.
func (in Input) demand() []int {
	if in.Demand != nil {
		return in.Demand
	}
	n := len(in.Clients)
	d := make([]int, n)
	for c := range d {
		d[c] = in.Sessions / n
		if c < in.Sessions%n {
			d[c]++
		}
	}
	return d
}

// maxRTT returns t*_j = max_c t_cj (eq. 14).
func (s Server) maxRTT() float64 {
	m := 0.0
	for _, v := range s.RTT {
		m = max(m, v)
	}
	return m
}

// capBlocks applies min(., L) and the optional MaxBlocks cap.
func (in Input) capBlocks(j int, m int64) int {
	m = min(m, int64(in.Model.Blocks))
	if c := in.Servers[j].MaxBlocks; c > 0 {
		m = min(m, int64(c))
	}
	return int(max(m, 0))
}
