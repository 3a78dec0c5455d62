package experiment

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/swarmllm/swarm/sim"
)

// Run simulates Options.Runs runs, Options.Parallel at a time on
// goroutines, and averages them (sim.Summarize). tick, if not nil, is
// called after each run from the calling goroutine. Errors: ctx's error
// when it ends first (no result), or the runs' errors joined (a bad fleet
// or workload, sim.ErrBadConfig). An algorithm that fails in some runs
// is not an error: its Result counts the runs that worked and lists the
// failures (see Failed).
func (e *Experiment) Run(ctx context.Context, tick func()) ([]sim.Result, error) {
	type done struct {
		k   int
		res []sim.Result
		err error
	}
	jobs := make(chan int)
	results := make(chan done)
	var wg sync.WaitGroup
	for range min(e.o.Parallel, e.o.Runs) {
		wg.Go(func() {
			for k := range jobs {
				res, err := e.runOne(k)
				results <- done{k, res, err}
			}
		})
	}
	runs := make([][]sim.Result, e.o.Runs)
	errs := make([]error, e.o.Runs)
	cancelled := ctx.Done()
	next, finished, stopped := 0, 0, false
	for finished < next || !stopped && next < e.o.Runs {
		feed := jobs
		if stopped || next == e.o.Runs {
			feed = nil // nothing (more) to hand out: only collect
		}
		select {
		case feed <- next:
			next++
		case d := <-results:
			finished++
			runs[d.k], errs[d.k] = d.res, d.err
			if tick != nil {
				tick()
			}
		case <-cancelled:
			stopped, cancelled = true, nil
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return sim.Summarize(runs), nil
}

// runOne simulates run k with its own PCG stream (seed, k).
func (e *Experiment) runOne(k int) ([]sim.Result, error) {
	rng := rand.New(rand.NewPCG(e.o.Seed, uint64(k)))
	f, err := e.fleet(rng)
	if err != nil {
		return nil, err
	}
	return sim.Run(f, e.work, e.algs, rng, time.Now)
}

// fleet draws a run's fleet: fixed for the clustered scenario, random
// server and client nodes for the topology scenario.
func (e *Experiment) fleet(rng *rand.Rand) (*sim.Fleet, error) {
	var f *sim.Fleet
	var err error
	switch {
	case e.o.FleetData != nil:
		f = e.o.FleetData.Clone()
	case e.top == nil:
		f, err = sim.Clustered(e.o.ClientCluster)
	default:
		f, err = sim.OnTopology(e.top, e.rtt, e.o.Servers, e.o.Eta, rng)
	}
	if err != nil {
		return nil, err
	}
	if e.o.ModelData != nil {
		f.Model = *e.o.ModelData
	}
	f.Calibration = e.Calibration()
	f.ServerModel, f.LinkCost = e.serverModel, e.linkCost
	f.Petals.SessionTokens = e.o.PetalsSessionTokens
	f.MoveBandwidth = e.o.MoveBandwidth
	if e.serverModel == sim.ServerBatched {
		for j := range f.Servers {
			hw := &f.Servers[j].Hardware
			hw.TauBatch = sim.AssumedBatchCurve(hw.Tau, e.o.BatchGrowth)
		}
	}
	return f, nil
}

// Calibration returns the constants of Options.Calibration for this
// scenario: none, or MATLAB's from the clustered branch of
// test_general_case_online.m, its realnet branch (and the
// General_varying_*_online.m sweeps) for topologies, or
// test_general_case_online_large.m for the 26-server deployment of Table 5
// outside sweeps.
func (e *Experiment) Calibration() sim.Calibration {
	if e.o.Calibration != sim.CalibrationMATLAB {
		return sim.NoCalibration()
	}
	setup := sim.MATLABClustered
	if e.top != nil || e.o.FleetData != nil {
		setup = sim.MATLABTopology
		if _, a100, ok := sim.PaperDeployment("bellcanada"); ok && !e.sweep && e.o.Servers == 26 &&
			int(math.Round(e.o.Eta*26)) == a100 {
			setup = sim.MATLABLargeTopology
		}
	}
	c, _ := sim.MATLABCalibration(setup)
	return c
}
