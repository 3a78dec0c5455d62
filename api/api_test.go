package api_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
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

// TestStreamConnTruncated checks that a stream ending or breaking inside a
// frame is the end of the connection (ErrClosed), as a libp2p stream reset
// is, while a complete but malformed frame stays ErrBadFrame.
func TestStreamConnTruncated(t *testing.T) {
	frame, err := wire.AppendFrame(nil, &wire.Close{SessionID: "s"})
	require.NoError(t, err)
	reset := errors.New("stream reset")
	tests := []struct {
		name     string
		in       []byte
		tail     error // what the stream returns after in
		closed   bool
		badFrame bool
	}{
		{"ends inside the header", frame[:5], io.EOF, true, false},
		{"ends inside the payload", frame[:len(frame)-1], io.EOF, true, false},
		{"reset inside the payload", frame[:len(frame)-1], reset, true, false},
		// yamux's reset error wraps io.ErrUnexpectedEOF, which the codec
		// reads as a truncated frame.
		{"yamux reset inside the header", frame[:5], fmt.Errorf("stream reset: %w", io.ErrUnexpectedEOF), true, false},
		{"bad magic", append([]byte("XXXX"), frame[4:]...), io.EOF, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := io.MultiReader(bytes.NewReader(tt.in), errReader{tt.tail})
			fc := api.NewStream(readOnly{r}, 0, "peer")
			_, err := fc.ReadFrame()
			require.Equal(t, tt.closed, errors.Is(err, api.ErrClosed), "%v", err)
			require.Equal(t, tt.badFrame, errors.Is(err, wire.ErrBadFrame), "%v", err)
			if tt.tail == reset {
				require.ErrorIs(t, err, reset)
			}
		})
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// readOnly is an io.ReadWriteCloser that only reads.
type readOnly struct{ io.Reader }

func (readOnly) Write(p []byte) (int, error) { return len(p), nil }
func (readOnly) Close() error                { return nil }
