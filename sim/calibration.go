package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Calibration is a set of per-session constants that the authors' MATLAB
// simulator adds on top of the performance model (1) and that paper 003
// never explains. The zero value (and NoCalibration) is the default,
// mechanism-only model: no constant is added. MATLABCalibration returns
// the authors' values, for comparisons with the MATLAB columns of the
// paper's tables; it is opt-in (`swarm sim --calibration matlab`).
//
// The constants are applied where the MATLAB applies them (WS_RR.m,
// Petals_online.m, Petals_online_hacking.m, Petals_optimized_routing.m at
// commit 3f780530edcedb5ed6f3dfa3117793a8e0395831 of
// github.com/TingyangSunJeff/LLM_inference_simulator):
//
//	first token = wait + InitialDelay + AllocationDelay[alg] + sum_j (tI_cj + k_j tauI_j)
//	completion  = first token + (l_max - 1) sum_j (t_cj + k_j tau_j)
//
// so they enter the first-token time and the total, not the remaining
// tokens, and a session holds its attention caches for them too (the
// MATLAB's state_time is the completion time including them). With
// RoundWaits, a session that must wait for cache room (WS-RR and
// Optimized RR, our AdmitWait) starts only at the first PETALS back-off
// retry after the room appears: its wait w > 0 becomes the smallest sum
// 1 + 2 + 4 + ... (each term capped at Fleet.Petals.MaxBackoff) that is
// >= w. The PETALS-routed algorithms (AdmitRetry) already wait on that
// schedule because the simulator retries them. The estimate of one
// session's time behind R (SessionTime, ChooseR) includes InitialDelay
// but no allocation delay (BPRR_heuristic_general_extended.m).
type Calibration struct {
	// Name is "none" (or empty) for the mechanism-only model and "matlab"
	// for the authors' constants; it is printed with every result.
	Name string `json:"name"`
	// Source says which MATLAB script the values come from (empty for none).
	Source string `json:"source,omitempty"`
	// InitialDelay is added to every session's first token, in seconds
	// (MATLAB initial_delay).
	InitialDelay float64 `json:"initial_delay"`
	// AllocationDelay is added to every session's first token, in seconds,
	// per algorithm name (MATLAB allocation_delay_prop for "proposed",
	// allocation_delay_petals for the PETALS baseline and its ablations).
	// Algorithms not listed get none.
	AllocationDelay map[string]float64 `json:"allocation_delay,omitempty"`
	// RoundWaits rounds AdmitWait waits up to PETALS back-off steps
	// (MATLAB WS_RR.m and Petals_optimized_routing.m, "compute actual
	// waiting time ... with binary exponential backoff").
	RoundWaits bool `json:"round_waits"`
}

// Calibration names (Calibration.Name, `swarm sim --calibration`).
const (
	CalibrationNone   = "none"
	CalibrationMATLAB = "matlab"
)

// MATLABSetup names the script of the authors' simulator whose constants
// MATLABCalibration returns; they differ between scripts.
type MATLABSetup uint8

const (
	// MATLABClustered is test_general_case_online.m with realnet = 0, the
	// clustered scenario of Table 4: initial_delay = 100 ms,
	// allocation_delay_prop = 60e3 ms, allocation_delay_petals = 25e4 ms.
	MATLABClustered MATLABSetup = iota + 1
	// MATLABTopology is test_general_case_online.m with realnet = 1 (the
	// 9-server AboveNet runs of Table 5) and the General_varying_*_online.m
	// sweeps of Figs. 6-9: initial_delay = 70 ms, allocation_delay_prop =
	// 60e3 ms, allocation_delay_petals = 25e4 ms (2.5e5 in the sweeps).
	MATLABTopology
	// MATLABLargeTopology is test_general_case_online_large.m, the 26-server
	// deployment of Table 5 (BellCanada, GTS-CE): initial_delay = 70 ms,
	// allocation_delay_prop = 60e3 ms, allocation_delay_petals = 35e4 ms.
	MATLABLargeTopology
)

// matlabCommit is the commit of the authors' simulator the constants are
// read from.
const matlabCommit = "3f780530edcedb5ed6f3dfa3117793a8e0395831"

// NoCalibration returns the mechanism-only model: nothing is added.
func NoCalibration() Calibration { return Calibration{Name: CalibrationNone} }

// MATLABCalibration returns the authors' per-session constants for the
// given script, in seconds (the MATLAB works in milliseconds). Every
// algorithm but "proposed" gets allocation_delay_petals: the MATLAB passes
// it to Petals_online.m (petals, and opt-order with CG-BP's server order),
// Petals_online_hacking.m (opt-number) and Petals_optimized_routing.m
// (opt-rr); WS_RR.m (proposed) gets allocation_delay_prop. Waits are
// rounded to back-off steps. An unknown setup returns ok = false.
func MATLABCalibration(setup MATLABSetup) (c Calibration, ok bool) {
	var initial, prop, petals float64 // MATLAB ms
	var script string
	switch setup {
	case MATLABClustered:
		initial, prop, petals = 100, 60e3, 25e4
		script = "test_general_case_online.m (realnet = 0)"
	case MATLABTopology:
		initial, prop, petals = 70, 60e3, 25e4
		script = "test_general_case_online.m (realnet = 1), General_varying_*_online.m"
	case MATLABLargeTopology:
		initial, prop, petals = 70, 60e3, 35e4
		script = "test_general_case_online_large.m"
	default:
		return Calibration{}, false
	}
	c = Calibration{
		Name:            CalibrationMATLAB,
		Source:          fmt.Sprintf("LLM_inference_simulator@%s %s", matlabCommit[:7], script),
		InitialDelay:    initial / 1e3,
		AllocationDelay: map[string]float64{},
		RoundWaits:      true,
	}
	for _, a := range algorithms {
		if !a.Extra { // the authors' simulator has no live algorithms
			c.AllocationDelay[a.Name] = petals / 1e3
		}
	}
	c.AllocationDelay["proposed"] = prop / 1e3
	return c, true
}

// IsNone reports whether c adds nothing (the mechanism-only model).
func (c Calibration) IsNone() bool {
	if c.InitialDelay != 0 || c.RoundWaits {
		return false
	}
	for _, v := range c.AllocationDelay {
		if v != 0 {
			return false
		}
	}
	return true
}

// String describes the calibration in one line for table headers.
func (c Calibration) String() string {
	if c.IsNone() {
		return "calibration none (mechanism only)"
	}
	name := c.Name
	if name == "" {
		name = "custom"
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("initial delay %g ms", c.InitialDelay*1e3))
	byDelay := map[float64][]string{}
	for _, a := range algorithms {
		if v, ok := c.AllocationDelay[a.Name]; ok {
			byDelay[v] = append(byDelay[v], a.Name)
		}
	}
	delays := make([]float64, 0, len(byDelay))
	for v := range byDelay {
		delays = append(delays, v)
	}
	slices.Sort(delays)
	for _, v := range delays {
		parts = append(parts, fmt.Sprintf("allocation delay %g s for %s", v, strings.Join(byDelay[v], ",")))
	}
	if c.RoundWaits {
		parts = append(parts, "waits rounded up to back-off steps")
	}
	s := fmt.Sprintf("calibration %s (%s)", name, strings.Join(parts, ", "))
	if c.Source != "" {
		s += " from " + c.Source
	}
	return s
}

// Validate checks the constants; errors wrap ErrBadConfig.
func (c Calibration) Validate() error {
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	if !ok(c.InitialDelay) {
		return fmt.Errorf("%w: calibration initial delay %g s, want finite seconds >= 0", ErrBadConfig, c.InitialDelay)
	}
	for name, v := range c.AllocationDelay {
		if _, err := LookupAlgorithm(name); err != nil {
			return fmt.Errorf("calibration allocation delay: %w", err)
		}
		if !ok(v) {
			return fmt.Errorf("%w: calibration allocation delay %g s for %s, want finite seconds >= 0", ErrBadConfig, v, name)
		}
	}
	return nil
}

// setup returns the constant time between a session's start (cache
// admission) and the start of its prefill for algorithm a, in seconds.
func (c Calibration) setup(a Algorithm) float64 {
	return c.InitialDelay + c.AllocationDelay[a.Name]
}

// BackoffWait rounds a wait of w seconds up to the PETALS client's
// exponential back-off schedule: the first retry that comes at or after w
// when retries are spaced minBackoff * 2^(n-1) seconds, each spacing capped
// at maxBackoff (1 s and 60 s in PETALS and in the authors' WS_RR.m). It
// returns 0 for w <= 0. minBackoff must be > 0 and maxBackoff >= minBackoff
// (Fleet.Validate checks them); w must be finite.
func BackoffWait(w, minBackoff, maxBackoff float64) float64 {
	if !(w > 0) {
		return 0
	}
	t := 0.0
	for n := 0; ; n++ {
		step := maxBackoff
		if n < 1024 { // 2^n overflows float64 past 1023; the cap binds long before
			step = min(minBackoff*math.Exp2(float64(n)), maxBackoff)
		}
		t += step
		if t >= w {
			return t
		}
		if step == maxBackoff {
			// Constant spacing from here on: jump to the answer.
			k := math.Ceil((w - t) / maxBackoff)
			return t + k*maxBackoff
		}
	}
}
