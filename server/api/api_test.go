package api_test

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/server/api"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

func TestParseEndpoint(t *testing.T) {
	want := api.Endpoint{Inference: "ws://127.0.0.1:7000/v1/inference", Info: "http://127.0.0.1:7000/v1/info"}
	tests := []struct {
		in   string
		want api.Endpoint
		err  string
	}{
		{in: "127.0.0.1:7000", want: want},
		{in: " ws://127.0.0.1:7000 ", want: want},
		{in: "ws://127.0.0.1:7000/", want: want},
		{in: "ws://127.0.0.1:7000/v1/inference", want: want},
		{in: "http://127.0.0.1:7000", want: want},
		{in: "wss://h.example:443", want: api.Endpoint{Inference: "wss://h.example:443/v1/inference", Info: "https://h.example:443/v1/info"}},
		{in: "[::1]:7000", want: api.Endpoint{Inference: "ws://[::1]:7000/v1/inference", Info: "http://[::1]:7000/v1/info"}},
		{in: "", err: "empty address"},
		{in: "localhost", err: "want host:port"},
		{in: ":7000", err: "want host:port"},
		{in: "ftp://h:1", err: `scheme "ftp"`},
		{in: "ws://h:1/other", err: `path "/other"`},
		{in: "ws://h:1/v1/inference?x=1", err: "no user, query or fragment"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := api.ParseEndpoint(tt.in)
			if tt.err != "" {
				require.ErrorIs(t, err, api.ErrBadAddress)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestStreamConn sends frames both ways over a byte stream, from several
// writers at once (frames must not interleave), and checks the limits.
func TestStreamConn(t *testing.T) {
	a, b := net.Pipe()
	ca, cb := api.NewStream(a, 0, "a"), api.NewStream(b, 0, "b")
	defer ca.Close()
	require.Equal(t, "a", ca.RemoteAddr())

	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				st := &wire.Step{SessionID: "s", Position: w*1000 + i,
					Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 2, DModel: 3, Data: []float32{1, 2, 3, 4, 5, float32(i)}}}
				if err := ca.WriteFrame(st); err != nil {
					t.Error(err) // not require: this is not the test goroutine
					return
				}
			}
		})
	}
	last := map[int]int{}
	for range writers * each {
		f, err := cb.ReadFrame()
		require.NoError(t, err)
		st := f.(*wire.Step)
		w, i := st.Position/1000, st.Position%1000
		require.Equal(t, float32(i), st.Hidden.Data[5])
		if prev, ok := last[w]; ok {
			require.Equal(t, prev+1, i, "frames of one writer stay in order")
		}
		last[w] = i
	}
	wg.Wait()

	// A bad frame is refused before anything is written.
	err := ca.WriteFrame(&wire.Step{SessionID: ""})
	require.ErrorIs(t, err, wire.ErrBadFrame)

	// The end of the stream is ErrClosed.
	require.NoError(t, ca.Close())
	require.NoError(t, ca.Close(), "idempotent")
	_, err = cb.ReadFrame()
	require.ErrorIs(t, err, api.ErrClosed)
}

// TestStreamConnLimit checks that a payload above the limit is refused
// from its header.
func TestStreamConnLimit(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	cb := api.NewStream(b, 100, "b")
	go func() {
		hdr := []byte("SWRM\x01\x00\x04\x00")
		hdr = binary.LittleEndian.AppendUint32(hdr, 101)
		a.Write(hdr)
	}()
	_, err := cb.ReadFrame()
	require.ErrorIs(t, err, wire.ErrTooLarge)
	require.ErrorContains(t, err, "payload of 101 bytes exceeds the limit of 100")
}
