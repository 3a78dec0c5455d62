package server_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/servertest"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// The session-limit tests run on the fake clock of a synctest bubble: the
// idle timeout and the steps' spacing are exact.

// TestInMemIdleSessionExpires: a session with no step for the idle timeout
// is closed (SessionExpired, sent exactly one timeout after its last
// result), its caches go back to admission at once, and a later Step on it
// is UnknownSession; a session stepping more often than the timeout lives
// on; so does one with a Close pending.
func TestInMemIdleSessionExpires(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	x, err := m.Head().Embed([]int{5})
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		const idle = 15 * time.Second
		s, p := memAdmission(t, m, func(c *server.Config) { c.SessionIdleTimeout = idle })
		step := func(sid string, pos int) *wire.Step {
			return &wire.Step{SessionID: sid, Position: pos, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: m.Info().DModel, Data: x}}
		}
		p.send(memOpen(m, "busy", 10, 0))
		require.IsType(t, &wire.Granted{}, p.next())
		p.send(memOpen(m, "idle", 10, 0))
		require.IsType(t, &wire.Granted{}, p.next())
		p.send(step("idle", 0))
		require.Equal(t, "idle", expect[*wire.Result](p).SessionID)
		last := time.Now()

		// "busy" steps at 10 s and 24 s: never idle for 15 s.
		time.Sleep(10 * time.Second)
		p.send(step("busy", 0))
		require.Equal(t, "busy", expect[*wire.Result](p).SessionID)
		time.Sleep(5*time.Second - time.Nanosecond)
		synctest.Wait()
		require.Empty(t, p.frames, "not yet idle for 15 s")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		e := expect[*wire.Error](p)
		require.Equal(t, wire.CodeSessionExpired, e.Code)
		require.Equal(t, "idle", e.SessionID)
		require.Contains(t, e.Message, "had no step for 15s")
		require.Equal(t, idle, time.Since(last), "expired exactly one idle timeout after its last result")
		open := s.Info().Admission.Open
		require.Len(t, open, 1, "the expired session's caches are released")
		require.Equal(t, "busy", open[0].SessionID)

		time.Sleep(9 * time.Second)
		p.send(step("busy", 1))
		require.Equal(t, "busy", expect[*wire.Result](p).SessionID, "14 s after its last step")

		p.send(step("idle", 1))
		e = expect[*wire.Error](p)
		require.Equal(t, wire.CodeUnknownSession, e.Code)

		// A pending Close keeps the session from expiring as a second
		// error: it is answered Closed.
		p.send(&wire.Close{SessionID: "busy"})
		require.Equal(t, "busy", expect[*wire.Closed](p).SessionID)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, p.frames, "nothing more: no expiry of a closed session")
	})
}

// TestInMemSessionCaps: the per-connection cap refuses the session over it
// with TooManySessions (and admits again after a Close); the per-peer cap
// counts every connection from one IP address together, and another
// address is not affected.
func TestInMemSessionCaps(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	synctest.Test(t, func(t *testing.T) {
		s, p := memAdmission(t, m, func(c *server.Config) {
			c.MaxSessionsPerConn = 2
			c.MaxSessionsPerPeer = 3
		})
		p.send(memOpen(m, "a", 5, 0))
		require.IsType(t, &wire.Granted{}, p.next())
		p.send(memOpen(m, "b", 5, 0))
		require.IsType(t, &wire.Granted{}, p.next())
		p.send(memOpen(m, "c", 5, 0))
		e := expect[*wire.Error](p)
		require.Equal(t, wire.CodeTooManySessions, e.Code)
		require.Equal(t, "c", e.SessionID)
		require.Contains(t, e.Message, "--max-sessions-per-conn")
		p.send(&wire.Close{SessionID: "b"})
		require.IsType(t, &wire.Closed{}, p.next())
		p.send(memOpen(m, "c", 5, 0))
		require.IsType(t, &wire.Granted{}, p.next())

		// Connections from one host (ports differ) share the per-peer cap.
		dial := func(remote string) *peer {
			client, srv := api.Pipe(0, remote, s.URL)
			go s.ServeConn(srv)
			return newPeer(t, client)
		}
		p1, p2 := dial("10.0.0.7:4001"), dial("10.0.0.7:4002")
		p1.send(memOpen(m, "x", 5, 0))
		require.IsType(t, &wire.Granted{}, p1.next())
		p1.send(memOpen(m, "y", 5, 0))
		require.IsType(t, &wire.Granted{}, p1.next())
		p2.send(memOpen(m, "z", 5, 0))
		require.IsType(t, &wire.Granted{}, p2.next())
		p2.send(memOpen(m, "w", 5, 0))
		e = expect[*wire.Error](p2)
		require.Equal(t, wire.CodeTooManySessions, e.Code)
		require.Contains(t, e.Message, "peer 10.0.0.7 already holds 3 sessions")

		// The refused Open left nothing behind: after a Close on p1, p2's
		// host has room for one again.
		p1.send(&wire.Close{SessionID: "x"})
		require.IsType(t, &wire.Closed{}, p1.next())
		p2.send(memOpen(m, "w", 5, 0))
		require.IsType(t, &wire.Granted{}, p2.next())
		require.Len(t, s.Info().Admission.Open, 5, "a, c, y, z, w")
	})
}
