package ingress_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/swarm"
)

// recordingReplica is a STAND-IN for a full-range replica that records the
// body of each POST /v1/completions and streams "ok".
func recordingReplica(t *testing.T, bodies chan<- map[string]any) string {
	t.Helper()
	mux := http.NewServeMux()
	var url string
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Info{BackendModel: "engine-model", State: api.StateServing, MaxLength: 512,
			ServerInfo: swarm.ServerInfo{ID: url, Model: "stories260K", Span: swarm.Span{Start: 0, End: 5}, FullRange: true,
				Tau: 1e-9, ProtocolVersion: swarm.ProtocolVersion}})
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		bodies <- req
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"choices": [{"text": "ok", "index": 0, "finish_reason": "stop"}]}` + "\n\ndata: [DONE]\n\n"))
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	url = hs.URL
	return hs.URL
}

// jsonFormat is a constraint that an engine applies itself.
type jsonFormat struct{}

func (jsonFormat) Allowed(int) bool    { return true }
func (jsonFormat) Accept(int)          {}
func (jsonFormat) ResponseFormat() any { return map[string]string{"type": "json_object"} }

// opaque is a constraint no engine knows.
type opaque struct{}

func (opaque) Allowed(int) bool { return true }
func (opaque) Accept(int)       {}

// TestReplicaGetsPenalties: a replica route is sent the OpenAI penalties,
// logit_bias and the constraint's response_format as request fields; a
// constraint without one cannot run there.
func TestReplicaGetsPenalties(t *testing.T) {
	bodies := make(chan map[string]any, 1)
	gw := ingresstest.Gateway(t, nil, []string{recordingReplica(t, bodies)}, nil)
	cfg := blocks.SamplerConfig{PresencePenalty: 0.5, FrequencyPenalty: -1, LogitBias: map[int]float64{7: -100}, Constraint: jsonFormat{}}
	res, err := gw.Generate(context.Background(), ingress.Request{Model: "stories260K", MaxTokens: 3, Sampler: cfg, API: "completions"},
		func(string) error { return nil })
	require.NoError(t, err)
	require.Equal(t, "replica", res.RouteKind)
	body := <-bodies
	require.InDelta(t, 0.5, body["presence_penalty"], 0)
	require.InDelta(t, -1, body["frequency_penalty"], 0)
	require.Equal(t, map[string]any{"7": -100.0}, body["logit_bias"])
	require.Equal(t, map[string]any{"type": "json_object"}, body["response_format"])

	_, err = gw.Generate(context.Background(), ingress.Request{Model: "stories260K", MaxTokens: 3, Sampler: blocks.SamplerConfig{}, API: "completions"},
		func(string) error { return nil })
	require.NoError(t, err)
	body = <-bodies
	for _, f := range []string{"presence_penalty", "frequency_penalty", "logit_bias", "response_format"} {
		require.NotContains(t, body, f, "unset fields are not sent")
	}

	_, err = gw.Generate(context.Background(), ingress.Request{Model: "stories260K", MaxTokens: 3, Sampler: blocks.SamplerConfig{Constraint: opaque{}}, API: "completions"},
		func(string) error { return nil })
	require.ErrorIs(t, err, ingress.ErrBadRequest)
}
