package ingress

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/swarmllm/swarm/swarm"
)

// nodeState is the gateway's Node of State: role "proxy".
func (g *Gateway) nodeState() *NodeState {
	return &NodeState{ID: g.cfg.NodeID, Role: "proxy", Version: swarm.Version, StartedAt: g.started.Unix(), Now: g.cfg.Now().Unix()}
}

// ingressStats reads the gateway's counters from its metrics registry.
func (g *Gateway) ingressStats() *IngressStats {
	st := &IngressStats{}
	families, err := g.reg.Gather()
	if err != nil {
		g.log.Debug("gathering the metrics for the state", "err", err)
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "swarm_ingress_requests_total":
				n := int64(m.GetCounter().GetValue())
				st.Requests += n
				if code := label(m, "outcome"); code != "ok" {
					st.Errors += n
					if st.ErrorsByCode == nil {
						st.ErrorsByCode = map[string]int64{}
					}
					st.ErrorsByCode[code] += n
				}
			case "swarm_ingress_tokens_total":
				n := int64(m.GetCounter().GetValue())
				if label(m, "kind") == "prompt" {
					st.PromptTokens += n
				} else {
					st.CompletionTokens += n
				}
			case "swarm_ingress_inflight_requests":
				st.Inflight += int64(m.GetGauge().GetValue())
			case "swarm_ingress_request_seconds":
				st.LatencySeconds += m.GetHistogram().GetSampleSum()
				st.LatencyCount += int64(m.GetHistogram().GetSampleCount())
			case "swarm_ingress_ttft_seconds":
				st.TTFTSeconds += m.GetHistogram().GetSampleSum()
				st.TTFTCount += int64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return st
}
