package admission_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/server/admission"
	"github.com/swarmllm/swarm/swarm"
)

// model is stories260K's shape: 5 blocks of 45,440 float32 parameters
// (s_m = 181,760 bytes) and f32 attention caches of 2 * 4 kv heads * 8 dims
// * 4 bytes = 256 bytes per block per token, so s_c(256) = 65,536 bytes.
var model = swarm.ModelInfo{
	Name: "stories260K", NBlocks: 5, DModel: 64, NHeads: 8, NKVHeads: 4, HeadDim: 8,
	BlockBytes: 181760, CacheBytesPerToken: 256,
}

const (
	weights      = 5 * 181760 // s_m * m for the whole span 0:5
	sessionBytes = 5 * 65536  // one session over 0:5 with max_length 256
)

// fullSession asks for the whole span with 256 tokens: 327,680 cache bytes.
func fullSession(id string, timeout time.Duration) admission.Request {
	return admission.Request{SessionID: id, Span: model.Blocks(), MaxLength: 256, AllocTimeout: timeout, Remaining: 10}
}

// newController returns a controller with room for `sessions` full sessions.
func newController(t *testing.T, sessions int, maxSessions int) *admission.Controller {
	t.Helper()
	c, err := admission.New(admission.Config{
		Model: model, Span: model.Blocks(), MemoryBytes: weights + int64(sessions)*sessionBytes, MaxSessions: maxSessions,
	})
	require.NoError(t, err)
	return c
}

// result is what an Acquire goroutine reports.
type result struct {
	id    string
	grant *admission.Grant
	err   error
}

// acquireAsync starts Acquire in a goroutine and returns its result channel.
func acquireAsync(ctx context.Context, c *admission.Controller, req admission.Request) <-chan result {
	ch := make(chan result, 1)
	go func() {
		g, err := c.Acquire(ctx, req)
		ch <- result{req.SessionID, g, err}
	}()
	return ch
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  admission.Config
		want string
	}{
		{"no memory", admission.Config{Model: model, Span: model.Blocks()}, "memory 0 bytes"},
		{"weights exceed memory", admission.Config{Model: model, Span: model.Blocks(), MemoryBytes: weights - 1},
			"the 5 blocks of span 0:5 need 908800 bytes (s_m*m) but memory is 908799 bytes"},
		{"span past model", admission.Config{Model: model, Span: swarm.Span{Start: 3, End: 6}, MemoryBytes: 1 << 30}, "ends past the model's 5 blocks"},
		{"negative max sessions", admission.Config{Model: model, Span: model.Blocks(), MemoryBytes: 1 << 30, MaxSessions: -1}, "max sessions -1"},
		{"no cache size", admission.Config{Span: swarm.Span{End: 1}, MemoryBytes: 1 << 30}, "cache_bytes_per_token 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := admission.New(tt.cfg)
			require.ErrorIs(t, err, admission.ErrBadConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
	// WeightBytes overrides s_m*m.
	c, err := admission.New(admission.Config{Model: model, Span: model.Blocks(), WeightBytes: 1000, MemoryBytes: 5000})
	require.NoError(t, err)
	require.Equal(t, int64(4000), c.CacheBudget())
}

func TestAcquireBadRequest(t *testing.T) {
	c, err := admission.New(admission.Config{Model: model, Span: swarm.Span{Start: 1, End: 4}, MemoryBytes: 1 << 30})
	require.NoError(t, err)
	tests := []struct {
		name string
		req  admission.Request
		want string
		span bool
	}{
		{"span outside hosted", admission.Request{Span: swarm.Span{Start: 0, End: 2}, MaxLength: 8}, "span 0:2 is not inside the hosted span 1:4", true},
		{"empty span", admission.Request{Span: swarm.Span{Start: 2, End: 2}, MaxLength: 8}, "2:2 is empty", true},
		{"zero max_length", admission.Request{Span: swarm.Span{Start: 1, End: 2}}, "max_length 0", false},
		{"negative timeout", admission.Request{Span: swarm.Span{Start: 1, End: 2}, MaxLength: 1, AllocTimeout: -time.Second}, "alloc_timeout -1s", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Acquire(context.Background(), tt.req)
			require.ErrorIs(t, err, admission.ErrBadRequest)
			require.ErrorContains(t, err, tt.want)
			if tt.span {
				require.ErrorIs(t, err, swarm.ErrBadSpan)
			}
		})
	}
}

// TestMemoryModel checks eq. (2): s_m*m + sum_r k_r*s_c(max_length_r) <= M.
func TestMemoryModel(t *testing.T) {
	c := newController(t, 1, 0) // room for 5 blocks x 256 tokens
	ctx := context.Background()
	// Two sessions over 2 and 3 blocks at 256 tokens fill the budget exactly.
	a, err := c.Acquire(ctx, admission.Request{SessionID: "a", Span: swarm.Span{Start: 0, End: 2}, MaxLength: 256})
	require.NoError(t, err)
	require.Equal(t, int64(2*65536), a.CacheBytes())
	b, err := c.Acquire(ctx, admission.Request{SessionID: "b", Span: swarm.Span{Start: 2, End: 5}, MaxLength: 256})
	require.NoError(t, err)
	require.Equal(t, int64(3*65536), b.CacheBytes())
	snap := c.Snapshot()
	require.Equal(t, int64(sessionBytes), snap.CacheBytesUsed)
	require.Zero(t, snap.CacheBytesFree)
	// One more token of one block no longer fits.
	_, err = c.Acquire(ctx, admission.Request{Span: swarm.Span{Start: 0, End: 1}, MaxLength: 1})
	require.ErrorIs(t, err, admission.ErrTimeout, "no room and alloc_timeout 0")
	a.Release()
	a.Release() // idempotent: frees once
	require.Equal(t, int64(3*65536), c.Snapshot().CacheBytesUsed)
	_, err = c.Acquire(ctx, admission.Request{Span: swarm.Span{Start: 0, End: 2}, MaxLength: 256})
	require.NoError(t, err)
}

func TestNeverFits(t *testing.T) {
	c := newController(t, 1, 0)
	g, err := c.Acquire(context.Background(), fullSession("small", 0))
	require.NoError(t, err)
	defer g.Release()
	// 257 tokens over 5 blocks need 5*257*256 = 328,960 > 327,680 bytes: even
	// an idle server cannot hold it, so it fails at once instead of waiting.
	req := fullSession("big", time.Hour)
	req.MaxLength = 257
	_, err = c.Acquire(context.Background(), req)
	require.ErrorIs(t, err, admission.ErrNeverFits)
	require.ErrorContains(t, err, "5 blocks x 257 tokens need 328960 cache bytes, but only 327680 of the 1236480 bytes of memory are left after the 908800 bytes of block weights")
	require.Empty(t, c.Snapshot().Queue)
}

func TestWaitThenGrantedOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, 0)
		first, err := c.Acquire(t.Context(), fullSession("first", 0))
		require.NoError(t, err)
		first.SetRemaining(30)

		start := time.Now()
		second := acquireAsync(t.Context(), c, fullSession("second", time.Minute))
		synctest.Wait() // second is queued and blocked
		snap := c.Snapshot()
		require.Len(t, snap.Queue, 1)
		require.Equal(t, api.QueuedSession{SessionID: "second", Position: 0, Span: model.Blocks(),
			CacheBytes: sessionBytes, Waited: 0, EstimatedWait: 30}, snap.Queue[0])

		time.Sleep(12 * time.Second) // advances the bubble's fake clock
		snap = c.Snapshot()
		require.Equal(t, 12.0, snap.Queue[0].Waited)
		require.Equal(t, 18.0, snap.Queue[0].EstimatedWait, "the estimate counts down with the clock")
		require.Equal(t, []swarm.SessionLoad{{Remaining: 18, Caches: 5}}, snap.Loads())

		first.Release()
		r := <-second
		require.NoError(t, r.err)
		require.Equal(t, 12*time.Second, r.grant.Waited())
		require.Equal(t, 12*time.Second, time.Since(start))
		snap = c.Snapshot()
		require.Empty(t, snap.Queue)
		require.Len(t, snap.Open, 1)
		require.Equal(t, "second", snap.Open[0].SessionID)
	})
}

func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, 0)
		first, err := c.Acquire(t.Context(), fullSession("first", 0))
		require.NoError(t, err)
		defer first.Release()

		start := time.Now()
		r := <-acquireAsync(t.Context(), c, fullSession("late", 5*time.Second))
		require.ErrorIs(t, r.err, admission.ErrTimeout)
		require.ErrorContains(t, r.err, "waited 5s for 327680 cache bytes")
		require.Nil(t, r.grant)
		require.Equal(t, 5*time.Second, time.Since(start), "gave up exactly at alloc_timeout")
		require.Empty(t, c.Snapshot().Queue, "a timed-out waiter leaves the queue")
	})
}

func TestFIFOOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, 0)
		holder, err := c.Acquire(t.Context(), fullSession("holder", 0))
		require.NoError(t, err)

		var results []<-chan result
		for _, id := range []string{"a", "b", "c", "d"} {
			results = append(results, acquireAsync(t.Context(), c, fullSession(id, time.Hour)))
			synctest.Wait() // queue in this exact order
		}
		var ids []string
		for _, q := range c.Snapshot().Queue {
			ids = append(ids, q.SessionID)
		}
		require.Equal(t, []string{"a", "b", "c", "d"}, ids)

		prev := holder
		for i, want := range []string{"a", "b", "c", "d"} {
			prev.Release() // room for exactly one: the head goes in
			r := <-results[i]
			require.NoError(t, r.err)
			require.Equal(t, want, r.id)
			synctest.Wait()
			require.Len(t, c.Snapshot().Queue, 3-i)
			prev = r.grant
		}
		prev.Release()
	})
}

// TestNoOvertaking: a small request that would fit now still queues behind a
// large waiter, and gets in once the large one gives up.
func TestNoOvertaking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, 0)
		part, err := c.Acquire(t.Context(), admission.Request{SessionID: "part", Span: swarm.Span{Start: 0, End: 2}, MaxLength: 256})
		require.NoError(t, err)
		defer part.Release()

		ctx, cancel := context.WithCancel(t.Context())
		big := acquireAsync(ctx, c, fullSession("big", time.Hour))
		synctest.Wait()
		small := acquireAsync(t.Context(), c, admission.Request{SessionID: "small", Span: swarm.Span{Start: 4, End: 5}, MaxLength: 256, AllocTimeout: time.Hour})
		synctest.Wait()
		require.Len(t, c.Snapshot().Queue, 2, "small (65536 bytes) would fit in the 196608 free but waits behind big")

		cancel()
		r := <-big
		require.ErrorIs(t, r.err, context.Canceled)
		require.Nil(t, r.grant)
		r = <-small
		require.NoError(t, r.err, "removing the head admits the next waiter that fits")
		r.grant.Release()
	})
}

func TestCancelRemovesWaiterAndUpdatesPositions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, 0)
		holder, err := c.Acquire(t.Context(), fullSession("holder", 0))
		require.NoError(t, err)

		ctxA, cancelA := context.WithCancel(t.Context())
		a := acquireAsync(ctxA, c, fullSession("a", time.Hour))
		synctest.Wait()
		var mu sync.Mutex
		var seen []admission.WaitStatus
		reqB := fullSession("b", time.Hour)
		reqB.OnWait = func(s admission.WaitStatus) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, s)
		}
		b := acquireAsync(t.Context(), c, reqB)
		synctest.Wait()

		cancelA()
		require.ErrorIs(t, (<-a).err, context.Canceled)
		synctest.Wait()
		snap := c.Snapshot()
		require.Len(t, snap.Queue, 1)
		require.Equal(t, "b", snap.Queue[0].SessionID)
		require.Equal(t, 0, snap.Queue[0].Position)

		holder.Release()
		r := <-b
		require.NoError(t, r.err)
		r.grant.Release()
		mu.Lock()
		defer mu.Unlock()
		// Queued behind a (holder ends in 10s, a would hold 10s more), then head.
		require.Equal(t, []admission.WaitStatus{
			{Position: 1, QueueLen: 2, EstimatedWait: 20},
			{Position: 0, QueueLen: 1, EstimatedWait: 10},
		}, seen)
	})
}

func TestMaxSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 10, 2) // memory for 10, cap of 2
		a, err := c.Acquire(t.Context(), fullSession("a", 0))
		require.NoError(t, err)
		b, err := c.Acquire(t.Context(), fullSession("b", 0))
		require.NoError(t, err)
		defer b.Release()
		third := acquireAsync(t.Context(), c, fullSession("c", time.Minute))
		synctest.Wait()
		snap := c.Snapshot()
		require.Len(t, snap.Queue, 1, "the session cap, not memory, holds c back")
		require.Equal(t, int64(8*sessionBytes), snap.CacheBytesFree)
		require.Equal(t, 10.0, snap.Queue[0].EstimatedWait)
		a.Release()
		r := <-third
		require.NoError(t, r.err)
		r.grant.Release()
	})
}

func TestCloseAndDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, 0)
		open, err := c.Acquire(t.Context(), fullSession("open", 0))
		require.NoError(t, err)
		waiting := acquireAsync(t.Context(), c, fullSession("waiting", time.Hour))
		synctest.Wait()

		drained := make(chan error, 1)
		go func() { drained <- c.Drain(t.Context()) }()
		r := <-waiting
		require.ErrorIs(t, r.err, admission.ErrClosed, "queued requests fail at shutdown")
		_, err = c.Acquire(t.Context(), fullSession("new", time.Hour))
		require.ErrorIs(t, err, admission.ErrClosed)
		synctest.Wait()
		select {
		case err := <-drained:
			t.Fatalf("Drain returned %v with a session still open", err)
		default:
		}
		require.True(t, c.Snapshot().Closed)
		open.Release()
		require.NoError(t, <-drained)

		// Drain of an idle controller returns at once; a deadline bounds it.
		require.NoError(t, c.Drain(t.Context()))
	})
}

func TestDrainDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, 0)
		g, err := c.Acquire(t.Context(), fullSession("stuck", 0))
		require.NoError(t, err)
		defer g.Release()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		err = c.Drain(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// TestConcurrentAcquirers runs many goroutines (real scheduling, for -race)
// that acquire random spans, check eq. (2) holds while they hold their
// grant, and release.
func TestConcurrentAcquirers(t *testing.T) {
	c := newController(t, 2, 3)
	spans := []swarm.Span{{Start: 0, End: 5}, {Start: 0, End: 1}, {Start: 1, End: 4}, {Start: 3, End: 5}}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			req := admission.Request{Span: spans[i%len(spans)], MaxLength: 64 + 64*(i%4), AllocTimeout: time.Minute, Remaining: 1}
			for range 20 {
				g, err := c.Acquire(context.Background(), req)
				if err != nil {
					errs <- err
					return
				}
				snap := c.Snapshot()
				if snap.CacheBytesUsed > c.CacheBudget() || len(snap.Open) > 3 || snap.CacheBytesFree < 0 {
					errs <- errors.New("eq. (2) or the session cap is violated")
				}
				for _, q := range snap.Queue {
					if q.EstimatedWait < 0 {
						errs <- errors.New("a queued request has a negative wait estimate")
					}
				}
				g.SetRemaining(0.5)
				g.Release()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	snap := c.Snapshot()
	require.Zero(t, snap.CacheBytesUsed)
	require.Empty(t, snap.Open)
	require.Empty(t, snap.Queue)
}

func TestDurationFromSeconds(t *testing.T) {
	tests := []struct {
		in   float64
		want time.Duration
	}{
		{0, 0},
		{1.5, 1500 * time.Millisecond},
		{-3, 0},
		{math.NaN(), 0},
		{1e300, time.Duration(math.MaxInt64)},
		{math.Inf(1), time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, admission.DurationFromSeconds(tt.in), "%g", tt.in)
	}
}
