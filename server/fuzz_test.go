package server_test

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// FuzzServeConn feeds arbitrary bytes to a server's stream transport. The
// server must never panic, must answer only with well-formed frames, and
// once the connection ends every session it opened must be released.
//
//	go test -run '^$' -fuzz FuzzServeConn ./server/
func FuzzServeConn(f *testing.F) {
	frames := func(fs ...wire.Frame) []byte {
		var b []byte
		for _, fr := range fs {
			var err error
			b, err = wire.AppendFrame(b, fr)
			if err != nil {
				panic(err)
			}
		}
		return b
	}
	open := &wire.Open{SessionID: "s", Model: "stories260K", Span: swarm.Span{Start: 0, End: 2}, MaxLength: 4, DType: swarm.DTypeF32}
	step := &wire.Step{SessionID: "s", Position: 0, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: 64, Data: make([]float32, 64)}}
	f.Add(frames(open, step, &wire.Close{SessionID: "s"}))
	f.Add(frames(open, step, step))
	f.Add(frames(open))
	f.Add(frames(step))
	f.Add([]byte("SWRM\x01\x00\x04\x00\xff\xff\xff\x7f"))
	f.Add([]byte("hello"))
	f.Add([]byte{})

	srv := newServer(f, swarm.Span{Start: 0, End: 2}, nil)
	f.Cleanup(func() { srv.Close() })
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		done := make(chan struct{})
		go func() {
			srv.ServeConn(api.NewStream(b, 0, "fuzz"))
			close(done)
		}()
		replies := make(chan error, 1)
		go func() {
			fc := api.NewStream(a, 0, "fuzz")
			for {
				if _, err := fc.ReadFrame(); err != nil {
					replies <- err
					return
				}
			}
		}()
		a.Write(in) // the server may close first: the error does not matter
		a.Close()
		<-done
		err := <-replies
		require.ErrorIs(t, err, api.ErrClosed, "the server only sends well-formed frames")
		require.NotErrorIs(t, err, io.ErrShortBuffer)
		info := srv.Info()
		require.Empty(t, info.Sessions, "sessions released when the connection ends")
		require.Empty(t, info.Admission.Queue)
	})
}
