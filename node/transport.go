package node

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server"
)

// limitedReason is passed to libp2p when a stream may use a limited
// (circuit relay) connection.
const limitedReason = "swarm data plane"

// Transport is the client end of the libp2p data plane: it opens the
// /swarm/inference/1 stream (Dial, a client.Dialer) and the /swarm/info/1
// stream (FetchInfo, a client.InfoFetcher) to servers named by
// "libp2p://PEERID" endpoints (api.P2PEndpoint). Streams may run over
// relayed (limited) connections: network.WithAllowLimitedConn. It is safe
// for concurrent use.
type Transport struct {
	h     host.Host
	addrs func(peer.ID) []ma.Multiaddr
}

// NewTransport returns a transport on h. addrs, if not nil, tells the
// addresses of a peer (e.g. from its registry entry) to add to h's
// peerstore before dialling; otherwise h finds them itself (its peerstore,
// the DHT).
func NewTransport(h host.Host, addrs func(peer.ID) []ma.Multiaddr) *Transport {
	return &Transport{h: h, addrs: addrs}
}

// open opens a stream of proto to the server of ep.
func (t *Transport) open(ctx context.Context, ep api.Endpoint, proto string) (network.Stream, peer.ID, error) {
	id, ok := ep.Peer()
	if !ok {
		return nil, "", fmt.Errorf("%w: %q is not %sPEERID", ErrBadEndpoint, ep.Inference, api.P2PScheme)
	}
	pid, err := peer.Decode(id)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %q: %w", ErrBadEndpoint, ep.Inference, err)
	}
	if t.addrs != nil {
		if as := t.addrs(pid); len(as) > 0 {
			t.h.Peerstore().AddAddrs(pid, as, peerstore.TempAddrTTL)
		}
	}
	s, err := t.h.NewStream(network.WithAllowLimitedConn(ctx, limitedReason), pid, protocol.ID(proto))
	if err != nil {
		return nil, "", fmt.Errorf("node: open %s to %s: %w", proto, pid, err)
	}
	return s, pid, nil
}

// Dial opens a session connection to the server of ep over
// /swarm/inference/1: wire frames back to back on the stream
// (api.NewStream), frames over maxPayload bytes refused.
func (t *Transport) Dial(ctx context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error) {
	s, pid, err := t.open(ctx, ep, api.InferenceProtocol)
	if err != nil {
		return nil, err
	}
	return api.NewStream(s, maxPayload, api.P2PScheme+pid.String()), nil
}

// FetchInfo reads the server's Info document over /swarm/info/1 with
// api.ReadInfo (at most api.MaxInfoBytes of JSON), within ctx.
func (t *Transport) FetchInfo(ctx context.Context, ep api.Endpoint) (api.Info, error) {
	s, pid, err := t.open(ctx, ep, api.InfoProtocol)
	if err != nil {
		return api.Info{}, err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetReadDeadline(dl)
	}
	_ = s.CloseWrite() // the request is the stream itself
	info, err := api.ReadInfo(s)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return api.Info{}, fmt.Errorf("node: read info of %s: %w", pid, err)
	}
	return info, nil
}

// StreamServer is what ServeStreams needs of a server; *server.Server
// implements it.
type StreamServer interface {
	// WriteInfo writes the Info document as JSON (the /swarm/info/1 answer).
	WriteInfo(ctx context.Context, w io.Writer) error
	// ServeConn serves the sessions of one connection until it ends.
	ServeConn(fc api.FrameConn)
}

// infoTimeout bounds the answer to one /swarm/info/1 stream.
const infoTimeout = 30 * time.Second

// ServeStreams registers the server's libp2p stream handlers on h:
// /swarm/inference/1 serves the sessions of each stream (srv.ServeConn
// over api.NewStream, frames over maxPayload bytes refused) and
// /swarm/info/1 answers the Info document. Streams over relayed (limited)
// connections are served too. The returned function removes both handlers
// (streams being served go on until they end or the server shuts down).
func ServeStreams(h host.Host, srv StreamServer, maxPayload int) (stop func()) {
	h.SetStreamHandler(protocol.ID(api.InferenceProtocol), func(s network.Stream) {
		srv.ServeConn(api.NewStream(s, maxPayload, api.P2PScheme+s.Conn().RemotePeer().String()))
	})
	h.SetStreamHandler(protocol.ID(api.InfoProtocol), func(s network.Stream) {
		ctx, cancel := context.WithTimeout(context.Background(), infoTimeout)
		defer cancel()
		_ = s.SetWriteDeadline(time.Now().Add(infoTimeout))
		if err := srv.WriteInfo(ctx, s); err != nil {
			_ = s.Reset()
			return
		}
		_ = s.Close()
	})
	return func() {
		h.RemoveStreamHandler(protocol.ID(api.InferenceProtocol))
		h.RemoveStreamHandler(protocol.ID(api.InfoProtocol))
	}
}

var _ StreamServer = (*server.Server)(nil)
