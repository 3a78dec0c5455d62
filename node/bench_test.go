package node

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/registry/registrytest"
)

// staticSource lists fixed endpoints (a client.Source).
type staticSource []api.Endpoint

func (s staticSource) Endpoints(context.Context) ([]api.Endpoint, error) { return s, nil }

// BenchmarkDecodeStep times one decode step (one token's hidden states
// through all 5 blocks of stories260K at one loopback server and back)
// over the websocket and over the /swarm/inference/1 libp2p stream (TCP,
// Noise, yamux) of the same server.
//
//	go test -run '^$' -bench DecodeStep -benchtime 2000x ./node/
func BenchmarkDecodeStep(b *testing.B) {
	srv := startServer(b, span(0, 5), b.TempDir())
	url := serveWebsocket(b, srv)
	boot := joinMember(b, registrytest.P2PConfig(nil))
	b.Cleanup(ServeStreams(boot.node.Host(), srv, 0))
	cli := joinMember(b, registrytest.P2PConfig(boot.node))
	head := loadHead(b)
	tr := NewTransport(cli.node.Host(), nil)
	for _, tc := range []struct {
		name string
		opts []client.Option
		urls []string
	}{
		{"websocket", nil, []string{url}},
		{"libp2p", []client.Option{client.WithSource(staticSource{api.P2PEndpoint(boot.reg.ID())}),
			client.WithDialer(tr.Dial), client.WithInfoFetcher(tr.FetchInfo)}, nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := client.New(head, tc.urls, tc.opts...)
			require.NoError(b, err)
			const length = 256
			sess, err := c.Open(b.Context(), length)
			require.NoError(b, err)
			defer sess.Close()
			x, err := head.Embed([]int{1})
			require.NoError(b, err)
			pos := 0
			for b.Loop() {
				if _, err := sess.Forward(context.Background(), pos, x, 1); err != nil {
					b.Fatal(err)
				}
				pos = (pos + 1) % length // back to 0: the server truncates its cache
			}
		})
	}
}
