package node

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// Unpublished is the Incarnation to give ChooseSpan for a server that has
// not published its JOIN yet: it comes after every joiner in the registry.
const Unpublished = math.MaxUint64

// PlacementParams are what every server of a model must agree on for their
// placements to fit together (`swarm serve --target-sessions` and
// `--max-length`).
type PlacementParams struct {
	// Model gives L = NBlocks, s_m = BlockBytes and, with MaxLength, s_c.
	Model swarm.ModelInfo
	// Sessions is R, the number of concurrent sessions the placement
	// guarantees to serve (paper 003 Sec. 3.3.1); at least 1.
	Sessions int
	// MaxLength is l^I_max + l_max in tokens, which sizes s_c =
	// Model.CacheBytes(MaxLength) (paper 003 eq. 2), and per block
	// Model.BlockCacheBytes(b, MaxLength) for sliding-window blocks; at
	// least 1.
	MaxLength int
}

// placementModel is L, s_m and s_c of the model, with s_c per block when
// some blocks slide (placement.Model.BlockCacheBytes).
func (p PlacementParams) placementModel() placement.Model {
	m := placement.Model{Blocks: p.Model.NBlocks, BlockBytes: p.Model.BlockBytes, CacheBytes: p.Model.CacheBytes(p.MaxLength)}
	if p.Model.SlidingWindow > 0 {
		m.BlockCacheBytes = make([]int64, p.Model.NBlocks)
		for b := range m.BlockCacheBytes {
			m.BlockCacheBytes[b] = p.Model.BlockCacheBytes(b, p.MaxLength)
		}
	}
	return m
}

// Validate returns an error wrapping ErrBadConfig naming the first bad field.
func (p PlacementParams) Validate() error {
	switch {
	case p.Model.NBlocks <= 0 || p.Model.BlockBytes <= 0 || p.Model.CacheBytesPerToken <= 0:
		return fmt.Errorf("%w: model %q: %d blocks of %d bytes, %d cache bytes per token; want all > 0",
			ErrBadConfig, p.Model.Name, p.Model.NBlocks, p.Model.BlockBytes, p.Model.CacheBytesPerToken)
	case p.Sessions < 1:
		return fmt.Errorf("%w: --target-sessions %d, want >= 1", ErrBadConfig, p.Sessions)
	case p.MaxLength < 1:
		return fmt.Errorf("%w: --max-length %d, want >= 1", ErrBadConfig, p.MaxLength)
	}
	return nil
}

// ChooseSpan returns the span that incremental CG-BP (placement.Incremental,
// paper 003 Alg. 2 lines 1-9 for one joining server) gives self, given the
// registry's entries:
//
//   - servers of the same model (name and L), not full-range, whose
//     effective state is SERVING or JOIN count; SUSPECTED, DOWN and LEFT
//     servers do not (their blocks are free to take);
//   - SERVING servers and JOIN servers whose span is final (not
//     Tentative: they are loading it) keep their spans;
//   - servers still choosing (JOIN, Tentative) that joined before self,
//     in the order (Incarnation, NodeID), are placed one after the other
//     by the same rule, each seeing the ones before it; those that joined
//     after self are ignored (they will place themselves around self);
//   - self gets its span last.
//
// Every server of a settled registry view therefore computes the same
// spans for the joiners before it, so that servers starting at the same
// moment take different spans, as if they had joined one after another in
// incarnation order (deterministic tie-break by peer id). Each server's
// t*_j is its advertised ClientRTT (one worst-case client: CG-BP only uses
// t*_j = max_c t_cj, eq. 14), its M_j MemoryBytes and tau_j Tau.
//
// self.Info must hold the server's MemoryBytes, Tau and ClientRTT;
// self.Incarnation is Unpublished before its first JOIN. Errors wrap
// ErrPlacement (self cannot hold one block plus R attention caches) or
// ErrBadConfig.
func ChooseSpan(entries []registry.Entry, self registry.Entry, p PlacementParams) (swarm.Span, error) {
	if err := p.Validate(); err != nil {
		return swarm.Span{}, err
	}
	if err := checkPlaceable(self.Info); err != nil {
		return swarm.Span{}, fmt.Errorf("%w: this server: %w", ErrBadConfig, err)
	}
	fixed, joiners := placedBefore(entries, self, p)
	in := placement.Input{
		Model:    p.placementModel(),
		Clients:  []string{"clients"},
		Sessions: p.Sessions,
	}
	// spans[j] is fixed for the fixed servers; the joiners' and self's are
	// empty (hosting nothing) until placed, so that a tentative span never
	// weighs on an earlier joiner.
	spans := make([]swarm.Span, len(fixed)+len(joiners)+1)
	for j, e := range append(append(fixed, joiners...), self) {
		in.Servers = append(in.Servers, placement.Server{
			Name: e.NodeID, MemoryBytes: e.Info.MemoryBytes, Tau: e.Info.Tau, RTT: []float64{e.Info.ClientRTT},
		})
		if j < len(fixed) {
			spans[j] = e.Info.Span
		}
	}
	for k := len(fixed); k < len(spans)-1; k++ {
		s, err := placement.Incremental(in, spans, k)
		if err != nil {
			s = swarm.Span{} // an earlier joiner too small to host a block hosts nothing
		}
		spans[k] = s
	}
	s, err := placement.Incremental(in, spans, len(spans)-1)
	if errors.Is(err, placement.ErrInfeasible) {
		return swarm.Span{}, fmt.Errorf("%w: %w", ErrPlacement, err)
	}
	if err != nil {
		return swarm.Span{}, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return s, nil
}

// placedBefore splits the entries that count for self's placement into the
// servers whose spans are fixed and the joiners still choosing before self
// (sorted by incarnation, then node id).
func placedBefore(entries []registry.Entry, self registry.Entry, p PlacementParams) (fixed, joiners []registry.Entry) {
	for _, e := range entries {
		if e.NodeID == self.NodeID || !sameModelServer(e, p.Model) || checkPlaceable(e.Info) != nil {
			continue
		}
		switch {
		case e.State == swarm.StateServing || (e.State == swarm.StateJoin && !e.Info.Tentative):
			if e.Info.Span.Validate(p.Model.NBlocks) == nil {
				fixed = append(fixed, e)
			}
		case e.State == swarm.StateJoin && joinedBefore(e, self):
			joiners = append(joiners, e)
		}
	}
	slices.SortFunc(joiners, func(a, b registry.Entry) int {
		return cmp.Or(cmp.Compare(a.Incarnation, b.Incarnation), cmp.Compare(a.NodeID, b.NodeID))
	})
	return fixed, joiners
}

// EarlierJoiners returns the node ids of the servers of the model that
// joined before self and have not settled on their spans yet (JOIN,
// Tentative). RunServer waits for them before it settles on its own span,
// so that joiners commit in incarnation order.
func EarlierJoiners(entries []registry.Entry, self registry.Entry, p PlacementParams) []string {
	_, joiners := placedBefore(entries, self, p)
	ids := make([]string, len(joiners))
	for i, e := range joiners {
		ids[i] = e.NodeID
	}
	return ids
}

// joinedBefore orders joiners by (Incarnation, NodeID).
func joinedBefore(a, b registry.Entry) bool {
	return a.Incarnation < b.Incarnation || (a.Incarnation == b.Incarnation && a.NodeID < b.NodeID)
}

// sameModelServer reports whether an entry is a span server of the model.
func sameModelServer(e registry.Entry, m swarm.ModelInfo) bool {
	return e.Info.Model == m.Name && !e.Info.FullRange && (e.Info.ModelBlocks == 0 || e.Info.ModelBlocks == m.NBlocks)
}

// checkPlaceable rejects advertised numbers placement cannot take.
func checkPlaceable(in swarm.ServerInfo) error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	switch {
	case in.MemoryBytes < 0:
		return fmt.Errorf("memory %d bytes, want >= 0", in.MemoryBytes)
	case !finite(in.Tau):
		return fmt.Errorf("tau %g, want a finite number of seconds >= 0", in.Tau)
	case !finite(in.ClientRTT):
		return fmt.Errorf("client RTT %g, want a finite number of seconds >= 0", in.ClientRTT)
	}
	return nil
}
