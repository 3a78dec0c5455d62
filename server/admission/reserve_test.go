package admission_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/server/admission"
)

// TestSetReserved checks the memory set aside during a span move: a
// reservation takes only room no session holds, sessions are admitted
// only into what it leaves, the snapshot shows it, and lowering it admits
// the session waiting for that room.
func TestSetReserved(t *testing.T) {
	c := newController(t, 3, 0) // room for 3 full sessions
	require.ErrorIs(t, c.SetReserved(-1), admission.ErrBadRequest)
	g1, err := c.Acquire(t.Context(), fullSession("a", 0))
	require.NoError(t, err)

	// 2 sessions' room is free: 3 cannot be set aside, 2 can.
	require.ErrorIs(t, c.SetReserved(3*sessionBytes), admission.ErrNeverFits)
	require.Zero(t, c.Reserved(), "a refused reservation changes nothing")
	require.NoError(t, c.SetReserved(2*sessionBytes))
	snap := c.Snapshot()
	require.Equal(t, int64(2*sessionBytes), snap.CacheBytesReserved)
	require.Equal(t, int64(0), snap.CacheBytesFree, "3 sessions of budget - 1 held - 2 reserved")

	// No room now: a session without alloc timeout is refused, one with a
	// timeout waits until the reservation is lowered.
	_, err = c.Acquire(t.Context(), fullSession("b", 0))
	require.ErrorIs(t, err, admission.ErrTimeout)
	waiting := acquireAsync(t.Context(), c, fullSession("c", time.Minute))
	require.Eventually(t, func() bool { return len(c.Snapshot().Queue) == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, c.SetReserved(sessionBytes))
	r := <-waiting
	require.NoError(t, r.err)
	require.Equal(t, int64(0), c.Snapshot().CacheBytesFree, "2 held + 1 reserved")

	// Lowering is always allowed; released sessions make room to raise it again.
	require.NoError(t, c.SetReserved(0))
	g1.Release()
	r.grant.Release()
	require.NoError(t, c.SetReserved(3*sessionBytes))
	require.Equal(t, int64(0), c.Snapshot().CacheBytesFree)
}
