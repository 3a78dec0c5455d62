package api_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// step is a Step frame carrying n tokens of d_model 4.
func step(pos, n int) *wire.Step {
	data := make([]float32, n*4)
	for i := range data {
		data[i] = float32(pos*100 + i)
	}
	return &wire.Step{SessionID: "s", Position: pos, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: n, DModel: 4, Data: data}}
}

// TestPipe carries frames both ways between the two ends of api.Pipe, each
// naming the other, and ends them from either side.
func TestPipe(t *testing.T) {
	for _, closer := range []string{"client", "server"} {
		t.Run(closer+" closes", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, s := api.Pipe(0, "client-1", "server-1")
				require.Equal(t, "server-1", c.RemoteAddr())
				require.Equal(t, "client-1", s.RemoteAddr())

				go func() { require.NoError(t, c.WriteFrame(step(3, 2))) }()
				f, err := s.ReadFrame()
				require.NoError(t, err)
				require.Equal(t, step(3, 2), f)
				go func() { require.NoError(t, s.WriteFrame(&wire.Closed{SessionID: "s"})) }()
				f, err = c.ReadFrame()
				require.NoError(t, err)
				require.Equal(t, &wire.Closed{SessionID: "s"}, f)

				// The other end's pending read ends with ErrClosed, and so
				// do writes from either end afterwards.
				end, other := c, s
				if closer == "server" {
					end, other = s, c
				}
				read := make(chan error, 1)
				go func() {
					_, err := other.ReadFrame()
					read <- err
				}()
				synctest.Wait()
				require.Empty(t, read, "nothing to read yet")
				require.NoError(t, end.Close())
				require.NoError(t, end.Close(), "idempotent")
				require.ErrorIs(t, <-read, api.ErrClosed)
				require.ErrorIs(t, other.WriteFrame(step(0, 1)), api.ErrClosed)
				require.ErrorIs(t, end.WriteFrame(step(0, 1)), api.ErrClosed)
				require.NoError(t, other.Close())
			})
		})
	}
}

// TestPipeLimit: a frame over maxPayload is refused from its header at
// either end; the writer of a payload larger than the reader's buffer,
// which nobody reads any more, is released by Close.
func TestPipeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 64 // bytes: a Step of 1 token of d_model 4 fits, one of 512 tokens (8 KiB) does not
		c, s := api.Pipe(limit, "c", "s")
		for _, ends := range [][2]api.FrameConn{{c, s}, {s, c}} {
			go func() { require.NoError(t, ends[0].WriteFrame(step(0, 1))) }()
			_, err := ends[1].ReadFrame()
			require.NoError(t, err)
		}
		wrote := make(chan error, 1)
		go func() { wrote <- c.WriteFrame(step(0, 512)) }()
		_, err := s.ReadFrame()
		require.ErrorIs(t, err, wire.ErrTooLarge)
		synctest.Wait()
		require.Empty(t, wrote, "the writer waits for its payload to be read")
		require.NoError(t, s.Close())
		require.ErrorIs(t, <-wrote, api.ErrClosed)
		require.NoError(t, c.Close())
	})
}

// TestPipeDurablyBlocks: a read with nothing to read blocks durably in a
// synctest bubble, so the fake clock advances past it (a 30 s timeout
// takes no real time) and synctest.Wait returns; the in-memory data plane
// (server/servertest) relies on it.
func TestPipeDurablyBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := api.Pipe(0, "c", "s")
		read := make(chan error, 1)
		go func() {
			_, err := s.ReadFrame()
			read <- err
		}()
		start := time.Now()
		timer := time.NewTimer(30 * time.Second)
		<-timer.C
		require.Equal(t, 30*time.Second, time.Since(start))
		synctest.Wait()
		require.Empty(t, read)
		require.NoError(t, c.Close())
		require.ErrorIs(t, <-read, api.ErrClosed)
	})
}
