package client

import (
	"slices"
	"time"

	"github.com/swarmllm/swarm/swarm"
)

// HopStats is what the client measured at one hop of a chain.
type HopStats struct {
	// Server is the hop's inference URL.
	Server string
	// Hosted is the span the server hosts; Span the blocks it processes
	// for this session (k_j = Span.Len()).
	Hosted, Span swarm.Span
	// Steps is the number of steps the hop answered (replay included);
	// Tokens the positions they carried.
	Steps, Tokens int
	// Replayed is the number of positions replayed into it after a
	// failover.
	Replayed int
	// RTTs are the per-token round trip times t_cj of paper 003 eq. (1):
	// for each single-token step, the time from sending the Step to
	// receiving its Result minus the compute time the server reported.
	RTTs []time.Duration
	// RTT is the median of RTTs (0 without single-token steps).
	RTT time.Duration
	// Compute is the median server compute time of the single-token steps
	// (about k_j * tau_j).
	Compute time.Duration
	// Failure is why the hop was replaced (only in Stats.Replaced).
	Failure string
}

// Stats are a session's measurements.
type Stats struct {
	// Hops is the current chain, in processing order.
	Hops []HopStats
	// Replaced are the hops that failed and were replaced, in order.
	Replaced []HopStats
	// Failovers counts hop replacements (attempts included).
	Failovers int
	// BadOutputs counts results refused because their hidden states held
	// NaN or Inf (ErrBadOutput; each failed its hop over).
	BadOutputs int
	// Tokens is the number of tokens Generate produced.
	Tokens int
	// TTFT is the time from the start of Generate to the first token.
	TTFT time.Duration
	// TPOT is the mean time per output token after the first.
	TPOT time.Duration
	// Total is the time from the start of Generate to its last token.
	Total time.Duration
}

// hopStats accumulates one hop's measurements.
type hopStats struct {
	steps, tokens, replayed int
	rtts, computes          []time.Duration
}

func (s *hopStats) add(n int, r stepResult) {
	s.steps++
	s.tokens += n
	if n == 1 {
		s.rtts = append(s.rtts, r.rtt)
		s.computes = append(s.computes, r.compute)
	}
}

func (s *hopStats) snapshot(h *hop, failure error) HopStats {
	out := HopStats{
		Server: h.cand.Endpoint.Inference, Hosted: h.cand.Info.Span, Span: h.span,
		Steps: s.steps, Tokens: s.tokens, Replayed: s.replayed,
		RTTs: slices.Clone(s.rtts), RTT: medianDuration(s.rtts), Compute: medianDuration(s.computes),
	}
	if failure != nil {
		out.Failure = failure.Error()
	}
	return out
}

// genStats accumulates Generate's token timings.
type genStats struct {
	tokens      int
	first, last time.Duration
}

// Stats returns the session's measurements so far.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Replaced: slices.Clone(s.replaced), Failovers: s.failovers, BadOutputs: s.badOutputs, Tokens: s.gen.tokens, TTFT: s.gen.first, Total: s.gen.last}
	for _, h := range s.hops {
		st.Hops = append(st.Hops, h.stats.snapshot(h, nil))
	}
	if s.gen.tokens > 1 {
		st.TPOT = (s.gen.last - s.gen.first) / time.Duration(s.gen.tokens-1)
	}
	return st
}

// medianDuration returns the median (0 for none).
func medianDuration(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
