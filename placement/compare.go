package placement

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// TinyFleetDistributions names the random tiny-fleet distributions of
// RandomTinyFleet, in a fixed order.
var TinyFleetDistributions = []string{"uniform", "two-class", "identical"}

// RandomTinyFleet draws a fleet small enough for Optimal (2-4 servers,
// L in [2, 5] blocks, 1-2 clients, R in [1, 4]) from the distribution dist:
//
//   - "uniform": each server's memory holds 0..L blocks plus R caches (plus
//     a random remainder), tau_j uniform in [1, 51] ms, t_cj in [0, 200] ms
//     (the fleets of the property tests);
//   - "two-class": each server is "big" (1 in 3; memory for L blocks and
//     R caches, tau 2-4 ms) or "small" (memory for 1-2 blocks and 1-3
//     caches, tau 10-30 ms), t_cj 5-20 ms (near) or 80-200 ms (far): the
//     shape of the paper's A100 + MIG fleets in miniature;
//   - "identical": copies of one server (memory for 1..L blocks plus 0..R
//     caches), all at one RTT per client: the Fig. 5 family.
//
// s_m is in [100, 1000) bytes and s_c in [1, s_m/4]. Errors wrap
// ErrBadInput for an unknown dist.
func RandomTinyFleet(rng *rand.Rand, dist string) (Input, error) {
	if !slices.Contains(TinyFleetDistributions, dist) {
		return Input{}, fmt.Errorf("%w: fleet distribution %q, want one of %s", ErrBadInput, dist, strings.Join(TinyFleetDistributions, ", "))
	}
	l := 2 + rng.IntN(4)
	sm := int64(100 + rng.IntN(900))
	in := Input{
		Model:    Model{Blocks: l, BlockBytes: sm, CacheBytes: 1 + rng.Int64N(sm/4)},
		Sessions: 1 + rng.IntN(4),
	}
	for c := range 1 + rng.IntN(2) {
		in.Clients = append(in.Clients, fmt.Sprintf("c%d", c))
	}
	sc, r := in.Model.CacheBytes, int64(in.Sessions)
	n := 2 + rng.IntN(3)
	var proto Server
	for j := range n {
		s := Server{Name: fmt.Sprintf("s%d", j)}
		switch dist {
		case "uniform":
			per := sm + sc*r
			s.MemoryBytes = per*int64(rng.IntN(l+1)) + rng.Int64N(per)
			s.Tau = 0.001 + 0.05*rng.Float64()
			for range in.Clients {
				s.RTT = append(s.RTT, 0.2*rng.Float64())
			}
		case "two-class":
			big := rng.IntN(3) == 0
			if big {
				s.MemoryBytes = sm*int64(l) + sc*int64(l)*r + rng.Int64N(sm)
				s.Tau = 0.002 + 0.002*rng.Float64()
			} else {
				m := int64(1 + rng.IntN(2))
				s.MemoryBytes = sm*m + sc*m*int64(1+rng.IntN(3)) + rng.Int64N(sc)
				s.Tau = 0.01 + 0.02*rng.Float64()
			}
			for range in.Clients {
				if rng.IntN(2) == 0 {
					s.RTT = append(s.RTT, 0.005+0.015*rng.Float64())
				} else {
					s.RTT = append(s.RTT, 0.08+0.12*rng.Float64())
				}
			}
		case "identical":
			if j == 0 {
				m := int64(1 + rng.IntN(l))
				proto.MemoryBytes = sm*m + sc*m*int64(rng.IntN(int(r)+1)) + rng.Int64N(sm)
				proto.Tau = 0.001 + 0.05*rng.Float64()
				for range in.Clients {
					proto.RTT = append(proto.RTT, 0.2*rng.Float64())
				}
			}
			s.MemoryBytes, s.Tau, s.RTT = proto.MemoryBytes, proto.Tau, slices.Clone(proto.RTT)
		}
		in.Servers = append(in.Servers, s)
	}
	return in, nil
}

// Ratios summarizes ratios T / T^o of an algorithm's average per-token time
// to the optimum's over fleets where both are feasible.
type Ratios struct {
	// N is the number of fleets the ratios cover.
	N int `json:"n"`
	// Median, P90 and Max are the empirical quantiles (nearest rank).
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
	// Infeasible counts fleets the optimum serves but the algorithm does
	// not.
	Infeasible int `json:"infeasible"`
}

// Comparison is the result of CompareWithOptimal for one distribution.
type Comparison struct {
	// Distribution is the fleet distribution (RandomTinyFleet).
	Distribution string `json:"distribution"`
	// Fleets is the number drawn; Feasible how many the optimum serves.
	Fleets   int `json:"fleets"`
	Feasible int `json:"feasible"`
	// Algorithms maps "cgbp" and "refined" to their ratios.
	Algorithms map[string]Ratios `json:"algorithms"`
	// RefinedWorse counts fleets where refined's per-token time exceeds
	// CG-BP's (both feasible); it should be 0.
	RefinedWorse int `json:"refined_worse"`
}

// CompareWithOptimal draws n fleets from dist with RandomTinyFleet (PCG
// seeded with seed and the distribution's index) and compares CG-BP and
// Refined with Optimal: per-token times come from the optimal routing (16)
// under each placement (RoutedPerToken), the optimum's from
// OptimalPerToken. Fleets the optimum cannot serve are skipped. Errors
// wrap ErrBadInput (unknown dist, n < 1) or come from the algorithms.
func CompareWithOptimal(n int, seed uint64, dist string) (Comparison, error) {
	if n < 1 {
		return Comparison{}, fmt.Errorf("%w: %d fleets, want >= 1", ErrBadInput, n)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(slices.Index(TinyFleetDistributions, dist))))
	out := Comparison{Distribution: dist, Fleets: n, Algorithms: map[string]Ratios{}}
	ratios := map[string][]float64{}
	infeasible := map[string]int{}
	for range n {
		in, err := RandomTinyFleet(rng, dist)
		if err != nil {
			return out, err
		}
		_, opt, err := OptimalPerToken(in)
		if errors.Is(err, ErrInfeasible) {
			continue
		} else if err != nil {
			return out, err
		}
		out.Feasible++
		got := map[string]float64{}
		for _, name := range []string{"cgbp", "refined"} {
			p, err := Algorithms[name](in)
			if err != nil && !errors.Is(err, ErrInfeasible) {
				return out, fmt.Errorf("%s: %w", name, err)
			}
			t := math.Inf(1)
			if err == nil {
				t, err = RoutedPerToken(in, p.Spans)
			}
			if err != nil {
				infeasible[name]++
				continue
			}
			got[name] = t
			ratios[name] = append(ratios[name], t/opt)
		}
		if g, ok := got["cgbp"]; ok {
			if f, ok := got["refined"]; !ok || f > g*(1+1e-9) {
				out.RefinedWorse++
			}
		}
	}
	for _, name := range []string{"cgbp", "refined"} {
		rs := ratios[name]
		slices.Sort(rs)
		q := Ratios{N: len(rs), Infeasible: infeasible[name]}
		if len(rs) > 0 {
			q.Median, q.P90, q.Max = quantile(rs, 0.5), quantile(rs, 0.9), rs[len(rs)-1]
		}
		out.Algorithms[name] = q
	}
	return out, nil
}

// quantile returns the nearest-rank q-quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(i, 0)]
}

// FormatComparisons formats comparisons as a plain-text table (one row per
// distribution and algorithm).
func FormatComparisons(cs []Comparison) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-8s %7s %8s %7s %7s %7s %11s\n", "fleets", "alg", "served", "n", "median", "p90", "max", "infeasible")
	for _, c := range cs {
		for _, name := range []string{"cgbp", "refined"} {
			q := c.Algorithms[name]
			fmt.Fprintf(&b, "%-10s %-8s %3d/%-3d %8d %7.4f %7.4f %7.4f %11d\n", c.Distribution, name, c.Feasible, c.Fleets, q.N, q.Median, q.P90, q.Max, q.Infeasible)
		}
		fmt.Fprintf(&b, "%-10s refined worse than cgbp on %d fleet(s)\n", c.Distribution, c.RefinedWorse)
	}
	return b.String()
}
