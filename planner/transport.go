package planner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"
	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// Stream protocols of the planner group. Each stream carries one direction
// of varint-length-prefixed protobuf frames (dragonboat's raftpb encoding).
const (
	// MessageProtocol carries Raft message batches (pb.MessageBatch).
	MessageProtocol protocol.ID = "/swarm/raft/1"
	// SnapshotProtocol carries the chunks of one snapshot (pb.Chunk, at most
	// 2 MiB of snapshot data each).
	SnapshotProtocol protocol.ID = "/swarm/raft/snapshot/1"
)

const (
	// maxFrameBytes bounds one frame: dragonboat caps a message batch at
	// 64 MiB (settings.MaxMessageBatchSize); plus the protobuf envelope.
	maxFrameBytes = 64<<20 + 1<<20
	// writeTimeout bounds one frame's write, so that a peer that stops
	// reading cannot block dragonboat's send queue forever.
	writeTimeout = 10 * time.Second
	// limitedReason lets Raft streams run over relayed (NAT'd) connections.
	limitedReason = "planner raft"
)

// transportFactory plugs the libp2p transport into dragonboat
// (config.ExpertConfig.TransportFactory). Raft addresses are libp2p peer ids.
type transportFactory struct {
	h   host.Host
	log *slog.Logger
}

var _ config.TransportFactory = (*transportFactory)(nil)

// Create returns the transport of one NodeHost.
func (f *transportFactory) Create(_ config.NodeHostConfig, onMessage raftio.MessageHandler, onChunk raftio.ChunkHandler) raftio.ITransport {
	return &p2pTransport{h: f.h, log: f.log, onMessage: onMessage, onChunk: onChunk, inbound: map[network.Stream]struct{}{}}
}

// Validate reports whether addr is a libp2p peer id.
func (f *transportFactory) Validate(addr string) bool {
	_, err := peer.Decode(addr)
	return err == nil
}

// p2pTransport is dragonboat's raftio.ITransport over a libp2p host:
// outbound connections are streams opened to the target peer id, inbound
// streams are read by the host's stream handlers.
type p2pTransport struct {
	h         host.Host
	log       *slog.Logger
	onMessage raftio.MessageHandler
	onChunk   raftio.ChunkHandler

	mu sync.Mutex // guards the fields below
	// inbound holds the open inbound streams, reset on Close.
	inbound map[network.Stream]struct{}
	closed  bool
	wg      sync.WaitGroup // inbound stream readers
}

var _ raftio.ITransport = (*p2pTransport)(nil)

// Name names the transport in dragonboat's logs.
func (t *p2pTransport) Name() string { return "swarm-libp2p" }

// Start registers the stream handlers.
func (t *p2pTransport) Start() error {
	t.h.SetStreamHandler(MessageProtocol, t.serveMessages)
	t.h.SetStreamHandler(SnapshotProtocol, t.serveChunks)
	return nil
}

// Close removes the stream handlers, resets the inbound streams and waits
// for their readers; no handler is called after it returns.
func (t *p2pTransport) Close() error {
	t.h.RemoveStreamHandler(MessageProtocol)
	t.h.RemoveStreamHandler(SnapshotProtocol)
	t.mu.Lock()
	t.closed = true
	for s := range t.inbound {
		_ = s.Reset()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}

// GetConnection opens a message stream to the peer id target.
func (t *p2pTransport) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	s, err := t.open(ctx, target, MessageProtocol)
	if err != nil {
		return nil, err
	}
	return &frameConn{s: s, w: msgio.NewVarintWriter(s)}, nil
}

// GetSnapshotConnection opens a snapshot stream to the peer id target.
func (t *p2pTransport) GetSnapshotConnection(ctx context.Context, target string) (raftio.ISnapshotConnection, error) {
	s, err := t.open(ctx, target, SnapshotProtocol)
	if err != nil {
		return nil, err
	}
	return &frameConn{s: s, w: msgio.NewVarintWriter(s)}, nil
}

func (t *p2pTransport) open(ctx context.Context, target string, proto protocol.ID) (network.Stream, error) {
	pid, err := peer.Decode(target)
	if err != nil {
		return nil, fmt.Errorf("planner: raft address %q is not a peer id: %w", target, err)
	}
	s, err := t.h.NewStream(network.WithAllowLimitedConn(ctx, limitedReason), pid, proto)
	if err != nil {
		return nil, fmt.Errorf("planner: open %s to %s: %w", proto, pid, err)
	}
	return s, nil
}

// track registers an inbound stream; false when the transport is closed.
func (t *p2pTransport) track(s network.Stream) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.inbound[s] = struct{}{}
	t.wg.Add(1)
	return true
}

func (t *p2pTransport) untrack(s network.Stream) {
	t.mu.Lock()
	delete(t.inbound, s)
	t.mu.Unlock()
	t.wg.Done()
}

// serveMessages reads message batches until the stream ends. A batch whose
// source address is not the stream's authenticated peer id is refused (and
// the stream reset): dragonboat learns replica addresses from it.
func (t *p2pTransport) serveMessages(s network.Stream) {
	if !t.track(s) {
		_ = s.Reset()
		return
	}
	defer t.untrack(s)
	remote := s.Conn().RemotePeer().String()
	t.serve(s, func(frame []byte) error {
		var b pb.MessageBatch
		if err := b.Unmarshal(frame); err != nil {
			return fmt.Errorf("decode message batch: %w", err)
		}
		if b.SourceAddress != remote {
			return fmt.Errorf("message batch claims source %q on a stream from %s", b.SourceAddress, remote)
		}
		t.onMessage(b)
		return nil
	})
}

// serveChunks reads the chunks of a snapshot until the stream ends or the
// chunk handler refuses one.
func (t *p2pTransport) serveChunks(s network.Stream) {
	if !t.track(s) {
		_ = s.Reset()
		return
	}
	defer t.untrack(s)
	t.serve(s, func(frame []byte) error {
		var c pb.Chunk
		if err := c.Unmarshal(frame); err != nil {
			return fmt.Errorf("decode snapshot chunk: %w", err)
		}
		if !t.onChunk(c) {
			return fmt.Errorf("snapshot chunk %d of shard %d refused", c.ChunkId, c.ShardID)
		}
		return nil
	})
}

// serve feeds each frame of s to handle; it closes s at EOF and resets it
// on any other end.
func (t *p2pTransport) serve(s network.Stream, handle func([]byte) error) {
	r := msgio.NewVarintReaderSize(s, maxFrameBytes)
	for {
		frame, err := r.ReadMsg()
		if err != nil {
			if errors.Is(err, network.ErrReset) || t.isClosed() {
				_ = s.Reset()
				return
			}
			_ = s.Close() // EOF: the sender closed the connection
			return
		}
		err = handle(frame)
		r.ReleaseMsg(frame)
		if err != nil {
			t.log.Warn("planner: dropping raft stream", "peer", s.Conn().RemotePeer(), "protocol", s.Protocol(), "err", err)
			_ = s.Reset()
			return
		}
	}
}

func (t *p2pTransport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// frameConn is one outbound stream: dragonboat's IConnection and
// ISnapshotConnection. dragonboat drives each connection from one goroutine.
type frameConn struct {
	s network.Stream
	w msgio.WriteCloser
}

var (
	_ raftio.IConnection         = (*frameConn)(nil)
	_ raftio.ISnapshotConnection = (*frameConn)(nil)
)

// Close closes the stream.
func (c *frameConn) Close() { _ = c.s.Close() }

// SendMessageBatch writes one batch.
func (c *frameConn) SendMessageBatch(b pb.MessageBatch) error {
	data, err := b.Marshal()
	if err != nil {
		return fmt.Errorf("planner: encode message batch: %w", err)
	}
	return c.write(data)
}

// SendChunk writes one snapshot chunk.
func (c *frameConn) SendChunk(chunk pb.Chunk) error {
	data, err := chunk.Marshal()
	if err != nil {
		return fmt.Errorf("planner: encode snapshot chunk: %w", err)
	}
	return c.write(data)
}

func (c *frameConn) write(frame []byte) error {
	if err := c.s.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return fmt.Errorf("planner: raft stream to %s: %w", c.s.Conn().RemotePeer(), err)
	}
	if err := c.w.WriteMsg(frame); err != nil {
		return fmt.Errorf("planner: raft stream to %s: %w", c.s.Conn().RemotePeer(), err)
	}
	return nil
}
