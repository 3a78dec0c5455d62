package sim

import (
	"fmt"
	"strings"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/swarm"
)

// ModelFromInfo returns the simulator's model for a model swarm reads
// (swarm.ModelInfo, as `swarm model info --json` prints it): L, s_m, the
// cache bytes per token and the sliding windows. Errors wrap ErrBadConfig
// for a model without blocks or sizes.
func ModelFromInfo(info swarm.ModelInfo) (ModelSpec, error) {
	m := ModelSpec{
		Name:               info.Name,
		Blocks:             info.NBlocks,
		BlockBytes:         info.BlockBytes,
		CacheBytesPerToken: info.CacheBytesPerToken,
		SlidingWindow:      info.SlidingWindow,
		SlidingPattern:     info.SlidingPattern,
	}
	if m.Name == "" {
		m.Name = info.Arch
	}
	if m.Blocks <= 0 || m.BlockBytes <= 0 || m.CacheBytesPerToken <= 0 {
		return ModelSpec{}, fmt.Errorf("%w: model %q: n_blocks %d, block_bytes %d, cache_bytes_per_token %d, want all > 0",
			ErrBadConfig, m.Name, m.Blocks, m.BlockBytes, m.CacheBytesPerToken)
	}
	return m, nil
}

// FleetFromInput returns the simulated fleet of a `swarm plan` fleet file
// (fleet.Load's placement.Input) as seen from its client named client
// ("" for the first), for sessions of sessionTokens = lI + l_max tokens:
//
//   - the model: L and s_m as given, and s_c / sessionTokens cache bytes
//     per token (rounded up), so that the simulator's s_c for sessions of
//     that length is the file's; a file's per-block s_c (sliding windows)
//     is not carried over;
//   - each server: M_j, tau_j, MaxBlocks and the PETALS throughputs as
//     given; the file's t_cj is the whole per-token cost (the overheads are
//     0); the file has no prefill model, so prefill costs one decode step
//     per block (tauI_j = tau_j) plus t_cj;
//   - the server-to-server RTTs, used only by PETALS routing and not in
//     the file, are the mean of the two servers' t_cj (0 on the diagonal);
//   - PETALS' cache budget per block (in.Petals.CacheBytesPerBlock) in
//     tokens of the per-token size, and its reserve, or PETALS' defaults.
//
// Hardware kinds (for blocks per server) are the server names without a
// trailing "-N" or "_N" number. Errors wrap ErrBadConfig (no such client, bad sizes).
func FleetFromInput(in placement.Input, client string, sessionTokens int) (*Fleet, error) {
	c := 0
	if client != "" {
		c = -1
		for i, name := range in.Clients {
			if name == client {
				c = i
			}
		}
		if c < 0 {
			return nil, fmt.Errorf("%w: fleet has no client %q (clients: %s)", ErrBadConfig, client, strings.Join(in.Clients, ", "))
		}
	}
	if len(in.Clients) == 0 {
		return nil, fmt.Errorf("%w: fleet has no clients", ErrBadConfig)
	}
	if sessionTokens < 1 {
		return nil, fmt.Errorf("%w: session of %d tokens, want >= 1", ErrBadConfig, sessionTokens)
	}
	per := (in.Model.CacheBytes + int64(sessionTokens) - 1) / int64(sessionTokens)
	f := &Fleet{
		Model:      ModelSpec{Name: "fleet file", Blocks: in.Model.Blocks, BlockBytes: in.Model.BlockBytes, CacheBytesPerToken: per},
		ClientNode: c,
		Petals:     DefaultPetalsConfig(),
	}
	if in.Petals.CacheBytesPerBlock > 0 && per > 0 {
		f.Petals.CacheTokens = int(in.Petals.CacheBytesPerBlock / per)
	}
	if in.Petals.ReservedBytes > 0 {
		f.Petals.ReservedBytes = in.Petals.ReservedBytes
	}
	for _, s := range in.Servers {
		if len(s.RTT) <= c {
			return nil, fmt.Errorf("%w: server %s has %d RTTs, want one per client (%d)", ErrBadConfig, s.Name, len(s.RTT), len(in.Clients))
		}
		kind := s.Name
		if i := strings.LastIndexAny(kind, "-_"); i > 0 && strings.Trim(kind[i+1:], "0123456789") == "" {
			kind = kind[:i]
		}
		f.Servers = append(f.Servers, Server{Name: s.Name, Hardware: Hardware{
			Kind: kind, Tau: s.Tau, TauI: swarm.PrefillFit{Intercept: s.Tau}, MemoryBytes: s.MemoryBytes,
			MaxBlocks: s.MaxBlocks, ForwardRPS: s.ForwardRPS, NetworkRPS: s.NetworkRPS,
		}})
		f.ClientRTT = append(f.ClientRTT, s.RTT[c])
	}
	for i := range f.Servers {
		row := make([]float64, len(f.Servers))
		for j := range row {
			if i != j {
				row[j] = (f.ClientRTT[i] + f.ClientRTT[j]) / 2
			}
		}
		f.ServerRTT = append(f.ServerRTT, row)
	}
	return f, f.Validate()
}

// Clone returns a copy of f that shares nothing mutable with it.
func (f *Fleet) Clone() *Fleet {
	g := *f
	g.Servers = append([]Server(nil), f.Servers...)
	for j := range g.Servers {
		g.Servers[j].Hardware.TauBatch = append([]swarm.BatchTau(nil), f.Servers[j].Hardware.TauBatch...)
	}
	g.ClientRTT = append([]float64(nil), f.ClientRTT...)
	g.ServerRTT = make([][]float64, len(f.ServerRTT))
	for i, row := range f.ServerRTT {
		g.ServerRTT[i] = append([]float64(nil), row...)
	}
	return &g
}
