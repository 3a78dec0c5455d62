package admission_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swarmllm/swarm/server/admission"
	"github.com/swarmllm/swarm/swarm"
)

// ExampleController admits one session on a server whose memory holds the
// weights of its 5 blocks plus the caches of exactly one full session, and
// refuses one that could never fit.
func ExampleController() {
	c, err := admission.New(admission.Config{
		Model:       model, // s_m = 181,760 bytes, 256 cache bytes per block per token
		Span:        swarm.Span{Start: 0, End: 5},
		MemoryBytes: 5*181760 + 5*256*256, // weights + one session of 256 tokens
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	g, err := c.Acquire(ctx, admission.Request{
		SessionID: "s1", Span: swarm.Span{Start: 0, End: 5}, MaxLength: 256,
		AllocTimeout: 30 * time.Second, Remaining: 12,
	})
	if err != nil {
		panic(err)
	}
	defer g.Release()
	snap := c.Snapshot()
	fmt.Println("reserved", g.CacheBytes(), "free", snap.CacheBytesFree, "open", len(snap.Open))

	_, err = c.Acquire(ctx, admission.Request{Span: swarm.Span{Start: 0, End: 5}, MaxLength: 300, AllocTimeout: time.Minute})
	fmt.Println(errors.Is(err, admission.ErrNeverFits))
	// Output:
	// reserved 327680 free 0 open 1
	// true
}
