package sim

import (
	"fmt"
	"math"

	"github.com/swarmllm/swarm/placement"
)

// Server is one simulated server.
type Server struct {
	// Name identifies the server in plans ("A100-0", "MIG-3").
	Name string `json:"name"`
	// Hardware is its class.
	Hardware Hardware `json:"hardware"`
	// Node is where it sits: a topology node index or a cluster index.
	Node int `json:"node"`
}

// Fleet is one deployment: the model, the servers, one client and the
// network between them. The client is the single proxy that submits every
// session (paper 003 Sec. 4.1).
type Fleet struct {
	// Model is the model served.
	Model ModelSpec `json:"model"`
	// Servers are the servers, in the order plans and routes index them.
	Servers []Server `json:"servers"`
	// ClientNode is the client's topology node or cluster (for reports).
	ClientNode int `json:"client_node"`
	// ClientRTT[j] is the network round trip time between the client and
	// server j in seconds (ping, without the overheads).
	ClientRTT []float64 `json:"client_rtt"`
	// ServerRTT[i][j] is the network round trip time between servers i and
	// j in seconds; only the PETALS routing heuristic uses it.
	ServerRTT [][]float64 `json:"server_rtt"`
	// Overheads turn RTTs into t_cj and tI_cj.
	Overheads Overheads `json:"overheads"`
	// Petals configures the PETALS baselines.
	Petals PetalsConfig `json:"petals"`
	// Calibration adds the authors' unexplained per-session constants
	// (MATLABCalibration); the zero value adds nothing.
	Calibration Calibration `json:"calibration"`
	// ServerModel is how servers step concurrent sessions; the zero value
	// is the paper's ServerIndependent.
	ServerModel ServerModel `json:"server_model"`
	// LinkCost is the WS-RR / opt-rr hop cost; the zero value is the
	// paper's all-tokens (8). PETALS routing has its own cost.
	LinkCost LinkCost `json:"link_cost"`
	// MoveBandwidth is how fast a server loads the weights of a replanning
	// move, bytes per second (the live placement process, "cgbp-replan"):
	// the migration takes the sum over its steps of the step's slowest
	// move, LoadBytes / MoveBandwidth, and sessions arriving before it ends
	// are routed on the incremental placement. 0: the replanned placement
	// serves from t = 0.
	MoveBandwidth float64 `json:"move_bandwidth,omitempty"`
}

// Validate checks the fleet; errors wrap ErrBadConfig and name the field.
func (f *Fleet) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	switch {
	case f.Model.Blocks <= 0:
		return bad("model blocks L = %d, want > 0", f.Model.Blocks)
	case f.Model.BlockBytes <= 0 || f.Model.CacheBytesPerToken <= 0:
		return bad("model block bytes %d and cache bytes per token %d, want > 0", f.Model.BlockBytes, f.Model.CacheBytesPerToken)
	case f.Model.SlidingWindow < 0 || f.Model.SlidingPattern < 0:
		return bad("model sliding window %d and pattern %d, want >= 0", f.Model.SlidingWindow, f.Model.SlidingPattern)
	case len(f.Servers) == 0:
		return bad("no servers")
	case len(f.ClientRTT) != len(f.Servers):
		return bad("client RTT has %d entries, want one per server (%d)", len(f.ClientRTT), len(f.Servers))
	case len(f.ServerRTT) != len(f.Servers):
		return bad("server RTT matrix has %d rows, want one per server (%d)", len(f.ServerRTT), len(f.Servers))
	case !ok(f.Overheads.PerToken) || !ok(f.Overheads.Prefill.Intercept) || !ok(f.Overheads.Prefill.Slope):
		return bad("overheads %+v, want finite seconds >= 0", f.Overheads)
	case f.Petals.CacheTokens < 1 || f.Petals.ReservedBytes < 0:
		return bad("petals cache tokens %d and reserve %d bytes, want >= 1 and >= 0", f.Petals.CacheTokens, f.Petals.ReservedBytes)
	case !ok(f.Petals.HopOverhead) || !ok(f.Petals.AllocPenalty):
		return bad("petals hop overhead %g s and alloc penalty %g s, want finite seconds >= 0", f.Petals.HopOverhead, f.Petals.AllocPenalty)
	case !ok(f.MoveBandwidth):
		return bad("move bandwidth %g bytes/s, want finite >= 0 (0: instantaneous)", f.MoveBandwidth)
	case f.Petals.SessionTokens < 0:
		return bad("petals session tokens %d, want >= 0 (0: lI + l_max)", f.Petals.SessionTokens)
	case f.ServerModel > ServerBatched:
		return bad("server model %d, want independent, serial or batched", f.ServerModel)
	case f.LinkCost > LinkDecode:
		return bad("link cost %d, want eq8 or eq4", f.LinkCost)
	case !(f.Petals.MinBackoff > 0) || !(f.Petals.MaxBackoff >= f.Petals.MinBackoff) || math.IsInf(f.Petals.MaxBackoff, 0):
		return bad("petals back-off %g s .. %g s, want 0 < min <= max, finite", f.Petals.MinBackoff, f.Petals.MaxBackoff)
	}
	if err := f.Calibration.Validate(); err != nil {
		return err
	}
	for j, s := range f.Servers {
		h := s.Hardware
		switch {
		case !ok(h.Tau) || !ok(h.TauI.Intercept) || !ok(h.TauI.Slope):
			return bad("servers[%d] (%s): tau %g s and prefill fit %+v, want finite seconds >= 0", j, s.Name, h.Tau, h.TauI)
		case h.MemoryBytes < 0 || h.MaxBlocks < 0:
			return bad("servers[%d] (%s): memory %d bytes and max blocks %d, want >= 0", j, s.Name, h.MemoryBytes, h.MaxBlocks)
		case !ok(h.ForwardRPS) || !ok(h.NetworkRPS):
			return bad("servers[%d] (%s): throughputs %g and %g rps, want finite values >= 0", j, s.Name, h.ForwardRPS, h.NetworkRPS)
		case !ok(f.ClientRTT[j]):
			return bad("client RTT to servers[%d] (%s) = %g s, want finite seconds >= 0", j, s.Name, f.ClientRTT[j])
		case len(f.ServerRTT[j]) != len(f.Servers):
			return bad("server RTT row %d has %d entries, want %d", j, len(f.ServerRTT[j]), len(f.Servers))
		}
		for i, v := range f.ServerRTT[j] {
			if !ok(v) {
				return bad("server RTT [%d][%d] = %g s, want finite seconds >= 0", j, i, v)
			}
		}
	}
	return nil
}

// TokenRTT returns t_cj (paper 003 eq. 1): the per-token round trip time
// between the client and server j, network RTT plus the per-token overhead,
// in seconds.
func (f *Fleet) TokenRTT(j int) float64 { return f.ClientRTT[j] + f.Overheads.PerToken }

// InputRTT returns tI_cj(lI): the per-input round trip time for an input of
// lI tokens, network RTT plus the prefill overhead, in seconds.
func (f *Fleet) InputRTT(j, lI int) float64 { return f.ClientRTT[j] + f.Overheads.Prefill.At(lI) }

// placementInput is the snapshot handed to placement/ for sessions of the
// workload's lengths, target R and PETALS arrival order, for algorithm alg
// (nil: any; a PETALS-placed one counts cache slots in sessions of
// Petals.SessionTokens when set).
func (f *Fleet) placementInput(w Workload, r int, order []int, alg *Algorithm) placement.Input {
	in := placement.Input{
		Model: placement.Model{
			Blocks:     f.Model.Blocks,
			BlockBytes: f.Model.BlockBytes,
			CacheBytes: f.Model.CacheBytes(w.InputTokens, w.OutputTokens),
			// s_c per block when some blocks slide (eq. 2 per block).
			BlockCacheBytes: f.Model.BlockCacheBytes(w.InputTokens, w.OutputTokens),
		},
		Clients:  []string{"client"},
		Sessions: r,
		Petals: placement.PetalsParams{
			CacheBytesPerBlock: f.Model.CacheBytesPerToken * int64(f.Petals.CacheTokens),
			ReservedBytes:      f.Petals.ReservedBytes,
		},
		Order: order,
	}
	if alg != nil && alg.petalsClient() && f.Petals.SessionTokens > 0 {
		// A PETALS session reserves SessionTokens positions on each block:
		// the servers' cache slots count sessions of that length.
		in.Model.CacheBytes = f.Model.CacheBytes(0, f.Petals.SessionTokens)
		in.Model.BlockCacheBytes = f.Model.BlockCacheBytes(0, f.Petals.SessionTokens)
	}
	for j, s := range f.Servers {
		h := s.Hardware
		in.Servers = append(in.Servers, placement.Server{
			Name:        s.Name,
			MemoryBytes: h.MemoryBytes,
			Tau:         h.Tau,
			RTT:         []float64{f.TokenRTT(j)},
			MaxBlocks:   h.MaxBlocks,
			TauPrefill:  h.TauI.At(w.InputTokens),
			RTTPrefill:  []float64{f.InputRTT(j, w.InputTokens)},
			ForwardRPS:  h.ForwardRPS,
			NetworkRPS:  h.NetworkRPS,
		})
	}
	return in
}
