package planner

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-msgio"
	"github.com/lni/dragonboat/v4/config"
	pb "github.com/lni/dragonboat/v4/raftpb"
	"github.com/stretchr/testify/require"
)

// TestTransportChecksSource sends message batches to a transport over
// in-memory libp2p: a batch naming another peer as its source is dropped
// and its stream reset; one naming the sender is delivered intact.
func TestTransportChecksSource(t *testing.T) {
	hosts, _ := meshNet(t, 2)
	got := make(chan pb.MessageBatch, 2)
	f := &transportFactory{h: hosts[1], log: slog.Default()}
	tr := f.Create(config.NodeHostConfig{}, func(b pb.MessageBatch) { got <- b }, func(pb.Chunk) bool { return true })
	require.NoError(t, tr.Start())
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	require.True(t, f.Validate(hosts[0].ID().String()))
	require.False(t, f.Validate("10.0.0.1:7000"), "raft addresses are peer ids")

	send := func(source string) error {
		s, err := hosts[0].NewStream(t.Context(), hosts[1].ID(), MessageProtocol)
		require.NoError(t, err)
		defer s.Close()
		b := pb.MessageBatch{SourceAddress: source, BinVer: 7, Requests: []pb.Message{{ShardID: 1, From: 2, To: 1, Term: 5}}}
		data, err := b.Marshal()
		require.NoError(t, err)
		require.NoError(t, msgio.NewVarintWriter(s).WriteMsg(data))
		_ = s.CloseWrite()
		_, err = s.Read(make([]byte, 1)) // EOF when accepted, reset when refused
		return err
	}

	err := send(hosts[1].ID().String())
	require.ErrorContains(t, err, "reset")
	require.ErrorIs(t, send(hosts[0].ID().String()), io.EOF)
	select {
	case b := <-got:
		require.Equal(t, hosts[0].ID().String(), b.SourceAddress)
		require.Equal(t, uint32(7), b.BinVer)
		require.Equal(t, []pb.Message{{ShardID: 1, From: 2, To: 1, Term: 5}}, b.Requests)
	case <-time.After(groupTimeout):
		t.Fatal("the batch with the true source was not delivered")
	}
	require.Empty(t, got, "the spoofed batch was delivered")
}
