package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/server/api"
)

// registrySource is the ingress's candidate source over the registry
// replica of a client-only swarm member (`swarm proxy --bootstrap`):
// block servers are the registry's routable servers of the model
// (node.Candidates: SERVING and not SUSPECTED), probed and reached as `swarm
// generate --bootstrap` reaches them (websocket, or libp2p streams), and
// replicas are its routable full-range entries of the model, probed at their
// advertised http endpoint.
type registrySource struct {
	cn   *node.ClientNode
	http *http.Client
}

var _ ingress.Source = (*registrySource)(nil)

// Candidates lists the model's block servers and replicas from the registry.
func (r *registrySource) Candidates(ctx context.Context, head blocks.Head) []ingress.Candidate {
	info := head.Info()
	var out []ingress.Candidate
	cands, err := node.NewCandidates(r.cn.Registry, info)
	if err != nil {
		return []ingress.Candidate{{Endpoint: "registry", Err: err}}
	}
	if servers := cands.Servers(); len(servers) > 0 {
		c, err := client.New(head, nil, cands.ClientOptions(r.cn.Node.Host())...)
		if err != nil {
			return []ingress.Candidate{{Endpoint: "registry", Err: err}}
		}
		out = ingress.FromClient(c.Candidates(ctx))
		// The provider is what the server published in the registry.
		provider := map[string]string{}
		for _, e := range servers {
			provider[api.P2PEndpoint(e.NodeID).Inference] = e.Info.Provider
			for _, addr := range e.Info.Endpoints {
				if ep, err := api.ParseEndpoint(addr); err == nil {
					provider[ep.Inference] = e.Info.Provider
				}
			}
		}
		for i := range out {
			if p, ok := provider[out[i].Endpoint]; ok && out[i].Info.Provider == "" {
				out[i].Info.Provider = p
			}
		}
	}
	for _, e := range r.cn.Registry.Snapshot() {
		if !e.Routable() || !e.Info.FullRange || e.Info.Model != info.Name || len(e.Info.Endpoints) == 0 {
			continue
		}
		c := ingress.ProbeReplica(ctx, r.http, e.Info.Endpoints[0], info)
		if c.Info.Provider == "" {
			c.Info.Provider = e.Info.Provider
		}
		out = append(out, c)
	}
	return out
}

// Client returns a client whose candidate source is the registry,
// restricted to the allowed providers, so that failovers also find
// servers that joined after the request was routed.
func (r *registrySource) Client(head blocks.Head, allow []string, _ []ingress.Candidate, opts ...client.Option) (*client.Client, error) {
	var copts []node.CandidatesOption
	if allow != nil {
		if len(allow) == 0 {
			return nil, fmt.Errorf("%w: no provider allowed", ingress.ErrNoRoute)
		}
		copts = append(copts, node.WithProviders(allow...))
	}
	cands, err := node.NewCandidates(r.cn.Registry, head.Info(), copts...)
	if err != nil {
		return nil, err
	}
	return client.New(head, nil, append(cands.ClientOptions(r.cn.Node.Host()), opts...)...)
}
