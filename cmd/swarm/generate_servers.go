package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/swarm"
)

// openClientHead parses --wire-dtype and loads only the model's head
// (embeddings, final norm, LM head, tokenizer): what a client of servers needs.
func openClientHead(o generateOptions) (blocks.Head, swarm.DType, error) {
	dtype, err := swarm.ParseDType(o.wireDType)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: --wire-dtype: %w", errUsage, err)
	}
	m, err := blocks.Open(o.model, o.modelOptions()...)
	if err != nil {
		return nil, 0, err
	}
	head, err := m.LoadHead()
	m.Close()
	if err != nil {
		return nil, 0, err
	}
	return head, dtype, nil
}

// openServers loads only the model's head and returns a blockRunner whose
// Forwarder is a client session over a chain of the --servers candidates.
// Failovers are logged to errOut; with --stats the release function prints
// each hop's measurements there.
func openServers(ctx context.Context, errOut io.Writer, o generateOptions) (blocks.Head, blockRunner, func() error, error) {
	head, dtype, err := openClientHead(o)
	if err != nil {
		return nil, nil, nil, err
	}
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := client.New(head, o.servers,
		client.WithStepTimeout(o.stepTimeout), client.WithAllocTimeout(o.allocTimeout),
		client.WithWireDType(dtype), client.WithLogger(logger))
	if err != nil {
		if errors.Is(err, client.ErrBadOption) {
			return nil, nil, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil, nil, nil, fmt.Errorf("%w: --servers: %w", errUsage, err)
	}
	runner := func(maxLength int) (blocks.Forwarder, func() error, error) {
		sess, err := c.Open(ctx, maxLength)
		if err != nil {
			return nil, nil, err
		}
		release := func() error {
			err := sess.Close()
			if o.stats {
				printHopStats(errOut, sess.Stats())
			}
			return err
		}
		return sess, release, nil
	}
	return head, runner, func() error { return nil }, nil
}

// printHopStats writes one line per hop of the chain (and per replaced
// hop): blocks processed, steps, the median per-token round trip time t_cj
// (paper 003 eq. 1: round trip minus the server's compute) and the median
// compute per token.
func printHopStats(w io.Writer, st client.Stats) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }
	for i, h := range st.Hops {
		fmt.Fprintf(w, "hop %d/%d %s blocks %s: %d steps, RTT t_cj median %s over %d tokens, compute median %s",
			i+1, len(st.Hops), h.Server, h.Span, h.Steps, ms(h.RTT), len(h.RTTs), ms(h.Compute))
		if h.Replayed > 0 {
			fmt.Fprintf(w, ", %d positions replayed", h.Replayed)
		}
		fmt.Fprintln(w)
	}
	for _, h := range st.Replaced {
		fmt.Fprintf(w, "replaced %s blocks %s after %d steps (RTT t_cj median %s): %s\n", h.Server, h.Span, h.Steps, ms(h.RTT), h.Failure)
	}
	if st.Failovers > 0 {
		fmt.Fprintf(w, "failovers: %d\n", st.Failovers)
	}
}
