package sim

import (
	"fmt"
	"strings"

	"github.com/swarmllm/swarm/swarm"
)

// ServerModel is how a server steps the decode tokens of the sessions it
// holds at once.
type ServerModel uint8

const (
	// ServerIndependent: concurrent sessions never slow each other; a token
	// costs k_j tau_j on server j whatever else runs there (paper 003 Sec.
	// 2.2, eq. 1). The zero value.
	ServerIndependent ServerModel = iota
	// ServerSerial: the server steps one session at a time (PETALS' server
	// runs one inference step after another). A token of session s on
	// server j waits for one step of every other session running there:
	// its compute term is sum over the sessions r running on j of
	// k_j^r tau_j (round robin with every step queued at once, the worst
	// case of a FIFO step queue).
	ServerSerial
	// ServerBatched: the server steps all its running sessions in one
	// batched pass (our server's step loop); a token's compute term on
	// server j is k_j tau_j BatchFactor(TauBatch_j, n_j) for n_j sessions
	// running there (swarm.BatchFactor).
	ServerBatched
)

// serverModelNames are the --server-model values, by ServerModel.
var serverModelNames = []string{"independent", "serial", "batched"}

// String is the --server-model name.
func (m ServerModel) String() string {
	if int(m) < len(serverModelNames) {
		return serverModelNames[m]
	}
	return fmt.Sprintf("server-model(%d)", uint8(m))
}

// ParseServerModel returns the model called name; errors wrap ErrBadConfig.
func ParseServerModel(name string) (ServerModel, error) {
	for i, n := range serverModelNames {
		if n == name {
			return ServerModel(i), nil
		}
	}
	return 0, fmt.Errorf("%w: server model %q, want %s", ErrBadConfig, name, strings.Join(serverModelNames, ", "))
}

// LinkCost is which per-hop cost WS-RR minimizes for the proposed
// algorithm and its ablations that route with WS-RR or opt-rr.
type LinkCost uint8

const (
	// LinkAllTokens is paper 003's all-tokens average (8), which also
	// charges each hop's prefill; the paper's simulator and this package's
	// default (the zero value).
	LinkAllTokens LinkCost = iota
	// LinkDecode is eq. (4), t_cj + k tau_j, the decode cost only: what the
	// live client (client.Route) and the ingress use.
	LinkDecode
)

var linkCostNames = []string{"eq8", "eq4"}

// String is the --link-cost name.
func (c LinkCost) String() string {
	if int(c) < len(linkCostNames) {
		return linkCostNames[c]
	}
	return fmt.Sprintf("link-cost(%d)", uint8(c))
}

// ParseLinkCost returns the link cost called name ("eq8" or "eq4"); errors
// wrap ErrBadConfig.
func ParseLinkCost(name string) (LinkCost, error) {
	for i, n := range linkCostNames {
		if n == name {
			return LinkCost(i), nil
		}
	}
	return 0, fmt.Errorf("%w: link cost %q, want eq8 (paper 003 eq. 8, all tokens) or eq4 (eq. 4, decode only, as the live client)", ErrBadConfig, name)
}

// AssumedBatchCurve returns the tau(batch) curve the simulator gives the
// paper's hardware under ServerBatched: tau(b) = tau (1 + growth (b - 1)),
// two points (1, tau) and (2, tau (1 + growth)) that swarm.BatchFactor
// extrapolates linearly. It is an ASSUMPTION (decode is memory-bound, so a
// batch costs little more than one step), not a measurement of an A100 or
// a MIG slice: `swarm bench server` measures the curve of a real server.
// growth < 0 is treated as 0.
func AssumedBatchCurve(tau, growth float64) []swarm.BatchTau {
	growth = max(growth, 0)
	return []swarm.BatchTau{{Batch: 1, Tau: tau}, {Batch: 2, Tau: tau * (1 + growth)}}
}

// DefaultBatchGrowth is the assumed relative growth of a batched step per
// extra session (AssumedBatchCurve): 3%.
const DefaultBatchGrowth = 0.03

// stepFactor returns the factor on k_j tau_j of a session's compute on
// server j under the fleet's server model: 1 (independent), the
// caches-weighted load (serial: sum of the running sessions' blocks on j
// over this session's blocks) or BatchFactor(n_j) (batched). blocks is
// this session's k_j, load the sum of k_j^r over the sessions running on j
// (this one included) and n their number.
func (f *Fleet) stepFactor(j, blocks, load, n int) float64 {
	switch f.ServerModel {
	case ServerSerial:
		if blocks <= 0 {
			return 1
		}
		return float64(max(load, blocks)) / float64(blocks)
	case ServerBatched:
		return swarm.BatchFactor(f.Servers[j].Hardware.TauBatch, n)
	}
	return 1
}
