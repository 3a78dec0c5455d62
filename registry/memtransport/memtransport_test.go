package memtransport

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/swarmllm/swarm/registry"
)

// serve answers every exchange request on t with "ack:" + the request.
func serve(ctx context.Context, t *Transport) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-t.Inbound():
				if m.Reply != nil {
					m.Reply(append([]byte("ack:"), m.Data...), nil)
				}
			}
		}
	}()
}

func drain(t *Transport) []string {
	var out []string
	for {
		select {
		case m := <-t.Inbound():
			out = append(out, m.From+":"+string(m.Data))
		default:
			return out
		}
	}
}

func TestNetwork_PartitionDropDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork()
		a, b, c := n.Join("a"), n.Join("b"), n.Join("c")
		require.Equal(t, []string{"b", "c"}, a.Peers())

		require.NoError(t, a.Broadcast(t.Context(), []byte("1")))
		require.Equal(t, []string{"a:1"}, drain(b))
		require.Equal(t, []string{"a:1"}, drain(c))

		n.Partition([]string{"a"}, []string{"b", "c"})
		require.NoError(t, a.Broadcast(t.Context(), []byte("2")))
		require.NoError(t, b.Broadcast(t.Context(), []byte("3")))
		require.Empty(t, drain(b))
		require.Equal(t, []string{"b:3"}, drain(c))
		_, err := a.Exchange(t.Context(), "b", []byte("x"))
		require.ErrorIs(t, err, ErrUnreachable)
		n.Heal()

		n.Drop("a", "b", true)
		require.NoError(t, a.Broadcast(t.Context(), []byte("4")))
		require.Empty(t, drain(b))
		require.Equal(t, []string{"a:4"}, drain(c))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		serve(ctx, b)
		got, err := a.Exchange(t.Context(), "b", []byte("x"))
		require.NoError(t, err, "Drop loses gossip only; streams still work")
		require.Equal(t, "ack:x", string(got))
		n.Drop("a", "b", false)

		n.Delay("a", "c", 2*time.Second)
		start := time.Now()
		require.NoError(t, a.Broadcast(t.Context(), []byte("5")))
		require.Empty(t, drain(c))
		n.Wait()
		require.Equal(t, 2*time.Second, time.Since(start))
		require.Equal(t, []string{"a:5"}, drain(c))
		require.Positive(t, n.Delivered())
		require.Positive(t, n.Dropped())

		require.NoError(t, b.Close())
		require.Equal(t, []string{"c"}, a.Peers())
		_, err = a.Exchange(t.Context(), "b", nil)
		require.ErrorIs(t, err, ErrUnreachable)
		require.ErrorIs(t, b.Broadcast(t.Context(), nil), registry.ErrClosed)
		cancel()
	})
}
