package fullrange_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/server/api"
	"github.com/swarmllm/swarm/server/fullrange"
	"github.com/swarmllm/swarm/swarm"
)

// TestInfoDecodesAsReplicaInfo checks that the /v1/info document a replica
// writes is what ingresses read, with and without a model description.
func TestInfoDecodesAsReplicaInfo(t *testing.T) {
	for _, mi := range []*swarm.ModelInfo{nil, {Name: "m", NBlocks: 5, DType: swarm.DTypeF32}} {
		in := fullrange.Info{Info: api.Info{State: api.StateServing, MaxLength: 512, ServerInfo: swarm.ServerInfo{
			ID: "http://h:1", Model: "m", Span: swarm.Span{Start: 0, End: 5}, FullRange: true, Tau: 0.001, Provider: "bob",
			Endpoints: []string{"http://h:1"}, ProtocolVersion: swarm.ProtocolVersion}},
			BackendModel: "engine", Backend: "http://127.0.0.1:8000", ModelInfo: mi}
		b, err := json.Marshal(in)
		require.NoError(t, err)
		var out ingress.ReplicaInfo
		require.NoError(t, json.Unmarshal(b, &out))
		require.Equal(t, in.ServerInfo, out.ServerInfo)
		require.Equal(t, "engine", out.BackendModel)
		require.Equal(t, api.StateServing, out.State)
		require.Equal(t, 512, out.MaxLength)
		require.Equal(t, mi, out.ModelInfo)
	}
}
