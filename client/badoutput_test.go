package client_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// fakeServe speaks the session protocol on fc for a server whose "blocks"
// compute out = f(in), until the connection ends.
func fakeServe(fc api.FrameConn, f func([]float32) []float32) {
	defer fc.Close()
	for {
		fr, err := fc.ReadFrame()
		if err != nil {
			return
		}
		switch fr := fr.(type) {
		case *wire.Open:
			err = fc.WriteFrame(&wire.Granted{SessionID: "s", DType: fr.DType})
		case *wire.Step:
			h := fr.Hidden
			h.Data = f(h.Data)
			err = fc.WriteFrame(&wire.Result{SessionID: fr.SessionID, Position: fr.Position, Hidden: h})
		case *wire.Close:
			err = fc.WriteFrame(&wire.Closed{SessionID: fr.SessionID})
		}
		if err != nil {
			return
		}
	}
}

// TestNonFiniteResultFailsOver: a server whose result holds a NaN is
// treated as failed (ErrBadOutput): the hop fails over to the other server,
// whose output is returned; with no other server the step fails with
// ErrFailover wrapping ErrBadOutput. Garbage never reaches the head.
func TestNonFiniteResultFailsOver(t *testing.T) {
	head := synthHead(t)
	model := head.Info()
	d := model.DModel
	synctest.Test(t, func(t *testing.T) {
		nan := func(x []float32) []float32 {
			out := make([]float32, len(x))
			out[d+3] = float32(math.NaN())
			return out
		}
		plusOne := func(x []float32) []float32 {
			out := make([]float32, len(x))
			for i, v := range x {
				out[i] = v + 1
			}
			return out
		}
		servers := map[string]func([]float32) []float32{"ws://bad:1/v1/inference": nan, "ws://good:1/v1/inference": plusOne}
		dial := func(_ context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error) {
			c, s := api.Pipe(maxPayload, "client", ep.Inference)
			go fakeServe(s, servers[ep.Inference])
			return c, nil
		}
		fetch := func(_ context.Context, ep api.Endpoint) (api.Info, error) {
			mi := model
			tau := 1e-6 // the bad server looks faster: it is chosen first
			if ep.Inference == "ws://good:1/v1/inference" {
				tau = 1e-3
			}
			return api.Info{State: api.StateServing, MaxLength: model.MaxSeqLen, ModelInfo: &mi, ServerInfo: swarm.ServerInfo{
				ID: ep.Inference, Model: model.Name, Span: model.Blocks(), Tau: tau, ProtocolVersion: swarm.ProtocolVersion}}, nil
		}
		x := make([]float32, 2*d)
		for i := range x {
			x[i] = float32(i) / 100
		}

		c, err := client.New(head, []string{"bad:1", "good:1"}, client.WithDialer(dial), client.WithInfoFetcher(fetch))
		require.NoError(t, err)
		sess, err := c.Open(t.Context(), 8)
		require.NoError(t, err)
		require.Equal(t, "ws://bad:1/v1/inference", sess.Chain()[0].Server)
		y, err := sess.Forward(t.Context(), 0, x, 2)
		require.NoError(t, err)
		require.Equal(t, plusOne(x), y, "the good server's output")
		st := sess.Stats()
		require.Len(t, st.Replaced, 1)
		require.Contains(t, st.Replaced[0].Failure, "NaN at token 1, column 3")
		require.Equal(t, 1, st.BadOutputs)
		require.NoError(t, sess.Close())

		alone, err := client.New(head, []string{"bad:1"}, client.WithDialer(dial), client.WithInfoFetcher(fetch))
		require.NoError(t, err)
		sess, err = alone.Open(t.Context(), 8)
		require.NoError(t, err)
		_, err = sess.Forward(t.Context(), 0, x, 2)
		require.ErrorIs(t, err, client.ErrFailover)
		require.ErrorIs(t, err, client.ErrBadOutput)
		_ = sess.Close() // its one hop is gone: closing it reports that
	})
}
