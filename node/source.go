package node

import (
	"context"
	"fmt"
	"net/http"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/ingress"
)

// Source is an ingress's candidate source over the registry replica of a
// client-only swarm member (`swarm proxy --bootstrap`): block servers are
// the registry's routable servers of the model (Candidates: SERVING and not
// SUSPECTED), probed and reached as a `swarm generate --bootstrap` client
// reaches them (websocket, or libp2p streams), and replicas are its
// routable full-range entries of the model, probed at their advertised
// http endpoint. It is safe for concurrent use.
type Source struct {
	cn   *Member
	http *http.Client
}

var _ ingress.Source = (*Source)(nil)

// NewSource returns the registry-backed source of cn; hc (nil: a new
// client) probes replicas.
func NewSource(cn *Member, hc *http.Client) *Source {
	if hc == nil {
		hc = &http.Client{}
	}
	return &Source{cn: cn, http: hc}
}

// Candidates implements ingress.Source: the model's block servers and
// replicas from the registry, each probed once (one round).
func (s *Source) Candidates(ctx context.Context, head blocks.Head, opts ...client.Option) []client.Candidate {
	info := head.Info()
	registryErr := func(err error) []client.Candidate {
		return []client.Candidate{{Endpoint: api.Endpoint{Inference: "registry"}, Err: err}}
	}
	var out []client.Candidate
	cands, err := NewCandidates(s.cn.Registry, info)
	if err != nil {
		return registryErr(err)
	}
	if servers := cands.Servers(); len(servers) > 0 {
		c, err := client.New(head, nil, append(cands.ClientOptions(s.cn.Node.Host()), opts...)...)
		if err != nil {
			return registryErr(err)
		}
		out = c.Candidates(ctx)
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
			if p, ok := provider[out[i].Endpoint.Inference]; ok && out[i].Info.Provider == "" {
				out[i].Info.Provider = p
			}
		}
	}
	for _, e := range s.cn.Registry.Snapshot() {
		if !e.Routable() || !e.Info.FullRange || e.Info.Model != info.Name || len(e.Info.Endpoints) == 0 {
			continue
		}
		c := ingress.ProbeReplica(ctx, s.http, e.Info.Endpoints[0], info)
		if c.Info.Provider == "" {
			c.Info.Provider = e.Info.Provider
		}
		out = append(out, c)
	}
	return out
}

// Client implements ingress.Source: a client whose candidate source is the
// registry, restricted to the allowed providers (nil: any), so that
// failovers also find servers that joined after the request was routed.
func (s *Source) Client(head blocks.Head, allow []string, _ []client.Candidate, opts ...client.Option) (*client.Client, error) {
	var copts []CandidatesOption
	if allow != nil {
		if len(allow) == 0 {
			return nil, fmt.Errorf("%w: no provider allowed", ingress.ErrNoRoute)
		}
		copts = append(copts, WithProviders(allow...))
	}
	cands, err := NewCandidates(s.cn.Registry, head.Info(), copts...)
	if err != nil {
		return nil, err
	}
	return client.New(head, nil, append(cands.ClientOptions(s.cn.Node.Host()), opts...)...)
}
