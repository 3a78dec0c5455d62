package p2p

import (
	"context"
	"math/rand"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
	"github.com/stretchr/testify/require"
)

func noJitterBackoff() backoff.BackoffStrategy {
	return backoff.NewExponentialBackoff(time.Second, 10*time.Second, backoff.NoJitter, time.Second, 2, 0, rand.NewSource(1))()
}

// TestRetryWithBackoff_ExponentialPauses checks the pauses between bootstrap
// rounds on a fake clock: 1 s, 2 s, 4 s, 8 s, then capped at 10 s.
func TestRetryWithBackoff_ExponentialPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		err := retryWithBackoff(t.Context(), noJitterBackoff(), func(context.Context) bool {
			at = append(at, time.Since(start))
			return len(at) == 7
		})
		require.NoError(t, err)
		s := time.Second
		require.Equal(t, []time.Duration{0, 1 * s, 3 * s, 7 * s, 15 * s, 25 * s, 35 * s}, at)
	})
}

// TestRetryWithBackoff_ResetAfterSuccess checks that a strategy reused after
// a success starts again from the shortest pause.
func TestRetryWithBackoff_ResetAfterSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := noJitterBackoff()
		fails := 3
		attempt := func(context.Context) bool { fails--; return fails < 0 }
		require.NoError(t, retryWithBackoff(t.Context(), b, attempt))
		fails = 1
		start := time.Now()
		require.NoError(t, retryWithBackoff(t.Context(), b, attempt))
		require.Equal(t, time.Second, time.Since(start))
	})
}

// TestRetryWithBackoff_CancelDuringPause checks that cancelling the context
// ends the loop during a pause, without waiting for the pause to elapse.
func TestRetryWithBackoff_CancelDuringPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		calls := 0
		go func() {
			done <- retryWithBackoff(ctx, noJitterBackoff(), func(context.Context) bool { calls++; return false })
		}()
		time.Sleep(2500 * time.Millisecond) // fake clock: lands inside the 2 s pause after the second attempt
		synctest.Wait()
		require.Equal(t, 2, calls)
		start := time.Now()
		cancel()
		err := <-done
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, time.Duration(0), time.Since(start))
		require.Equal(t, 2, calls)
	})
}
