package placement

import (
	"fmt"
	"slices"
	"strings"
)

// Func is a placement algorithm: a plan for the snapshot in, or an error.
// On ErrInfeasible the returned plan may still be the algorithm's partial
// result (see each algorithm).
type Func func(in Input) (Plan, error)

// Algorithms maps the names accepted by `swarm plan --algorithm` and the
// simulator to the placement algorithms. It is an explicit table (no init
// side effects), so the set is visible in one place.
var Algorithms = map[string]Func{
	"cgbp":       CGBP,           // ours: Alg. 1 lines 1-9 / Alg. 2
	"petals":     Petals,         // baseline: PETALS' own heuristic
	"opt-order":  OptimizedOrder, // ablation, Sec. 4.3
	"opt-number": OptimizedNumber,
	"optimal":    Optimal, // exhaustive BPRR (6), tiny fleets only
	"refined":    Refined, // CG-BP improved by local search over spans and R
	// live: incremental CG-BP at join in Input.Order, then one Replan
	"cgbp-live":   Live,
	"cgbp-replan": liveReplan,
}

// Names returns the algorithm names in sorted order.
func Names() []string {
	names := make([]string, 0, len(Algorithms))
	for n := range Algorithms {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the algorithm called name, or an error wrapping
// ErrUnknownAlgorithm that lists the known names.
func Lookup(name string) (Func, error) {
	if f, ok := Algorithms[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w: %q (want one of %s)", ErrUnknownAlgorithm, name, strings.Join(Names(), ", "))
}
