package ingress

import (
	"errors"
	"fmt"
	"strings"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/swarm"
)

// Choose routes a session of maxLength tokens over the probed candidates:
// client.Route (WS-RR on one routing graph of block servers and
// full-range replicas, paper 003 Alg. 2 lines 10-13; hybrid routes
// avoided), with the request's trusted-provider allowlist (nil = all) and
// the endpoints that failed earlier in this request left out. The plan is
// handed to the client as it is (client.OpenPlan): no second probe or
// route.
//
// Errors wrap ErrNoRoute naming the blocks no allowed server hosts and why
// candidates were left out.
func Choose(model swarm.ModelInfo, cands []client.Candidate, allow []string, exclude map[string]error, maxLength int) (client.Plan, error) {
	p, err := client.Route(client.RouteRequest{
		Model: model, Need: model.Blocks(), MaxLength: max(maxLength, 1),
		Exclude: exclude, Providers: allow, Replicas: true,
	}, cands)
	var nc *client.NoChainError
	if errors.As(err, &nc) {
		msg := fmt.Sprintf("%v for model %s", ErrNoRoute, model.Name)
		if len(nc.Uncovered) > 0 {
			parts := make([]string, len(nc.Uncovered))
			for i, s := range nc.Uncovered {
				parts[i] = s.String()
			}
			msg += ": no allowed server hosts blocks " + strings.Join(parts, ", ")
		} else if nc.Routing != nil {
			msg += ": " + nc.Routing.Error()
		}
		if len(nc.Unusable) > 0 {
			msg += " (left out: " + strings.Join(nc.Unusable, "; ") + ")"
		}
		return client.Plan{}, &noRouteError{msg: msg, err: err}
	}
	if err != nil {
		return client.Plan{}, fmt.Errorf("%w: %w", ErrNoRoute, err)
	}
	return p, nil
}

// chainCandidates returns the usable, allowed block servers of cands: the
// candidates a chain's client may fail over to.
func chainCandidates(cands []client.Candidate, allow []string) []client.Candidate {
	var out []client.Candidate
	for _, c := range cands {
		if c.Usable() && !c.Info.FullRange && client.Allowed(c.Info.Provider, allow) {
			out = append(out, c)
		}
	}
	return out
}

// noRouteError is an ErrNoRoute with client.Route's error inside.
type noRouteError struct {
	msg string
	err error
}

func (e *noRouteError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrNoRoute) true and exposes the route error.
func (e *noRouteError) Unwrap() []error { return []error{ErrNoRoute, e.err} }
