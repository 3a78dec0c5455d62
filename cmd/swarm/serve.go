package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/api"
	"github.com/swarmllm/swarm/swarm"
)

// serveReadyPrefix starts the line serve prints on stdout once it accepts
// sessions; scripts, tests and `swarm demo` parse the URL after it.
const serveReadyPrefix = "swarm serve: listening on "

const serveLong = `serve hosts a span of a model's transformer blocks and runs them for
clients: it loads only those blocks' weights, measures its decode time per
block (tau) and prefill time per block (tauI, fit linearly in the input
length) on this machine, or reads them from the measurement cache, and
serves:

  GET /v1/inference   websocket carrying swarm wire frames (sessions)
  GET /v1/info        JSON: span, tau, tauI, memory, cache room, per-session
                      load, queue, model description, state

Sessions are admitted by memory model (2) of the paper: the span's weights
plus k * s_c bytes of attention cache per open session must fit --memory. A
session that does not fit waits (FIFO, up to the client's alloc timeout) and
is told its queue position; one that can never fit is refused.

Once listening it prints one line on stdout:
  swarm serve: listening on ws://HOST:PORT/v1/inference
and logs to stderr. On SIGTERM or SIGINT it stops admitting sessions, lets
open sessions finish for --drain-timeout, then tells the rest to fail over,
and exits 0.

Spans are 0-based and half-open: --blocks 0:2 hosts blocks 0 and 1.

Examples:
  swarm serve --model stories260K.bin --blocks 0:2 --listen 127.0.0.1:7001
  swarm serve --model stories260K.gguf --blocks 2:5 --listen 127.0.0.1:0 --memory 2000000 --emulate-latency 20ms`

// serveOptions are the flags of `swarm serve` that are not server.Config.
type serveOptions struct {
	blocks   string
	logLevel string
}

func newServeCmd() *cobra.Command {
	cfg := server.DefaultConfig()
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve --model PATH --blocks START:END [--listen HOST:PORT] [flags]",
		Short: "Host a span of a model's blocks for clients",
		Long:  serveLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.blocks == "" {
				return fmt.Errorf("%w: --blocks START:END is required (e.g. --blocks 0:2)", errUsage)
			}
			span, err := swarm.ParseSpan(o.blocks)
			if err != nil {
				return fmt.Errorf("%w: --blocks: %w", errUsage, err)
			}
			cfg.Blocks = span
			return runServe(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	f := cmd.Flags()
	f.StringVar(&cfg.Model, "model", "", "model: a .gguf file, a llama2.c .bin checkpoint or a Hugging Face directory (required); only the span's blocks are read")
	f.StringVar(&cfg.Tokenizer, "tokenizer", "", "tokenizer file; a server computes blocks only and never loads it (accepted so that serve and generate take the same model flags)")
	f.StringVar(&o.blocks, "blocks", "", "span of blocks to host, START:END, 0-based half-open (required; 0:2 hosts blocks 0 and 1)")
	f.StringVar(&cfg.Listen, "listen", cfg.Listen, "TCP address to listen on, HOST:PORT; port 0 lets the OS choose (the URL is printed)")
	f.Int64Var(&cfg.MemoryBytes, "memory", 0, fmt.Sprintf("memory M for block weights plus attention caches, bytes; 0 = the weights plus room for %d sessions of the model's whole context", server.DefaultMemorySessions))
	f.IntVar(&cfg.MaxSessions, "max-sessions", 0, "most sessions open at once; 0 = no cap (memory alone decides)")
	f.DurationVar(&cfg.EmulateLatency, "emulate-latency", 0, "delay added before every reply frame and /v1/info answer, e.g. 20ms, to imitate a WAN link; 0 = none")
	f.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "on SIGTERM/SIGINT, how long open sessions may run before they are told to fail over; 0 = tell them at once")
	f.BoolVar(&cfg.Remeasure, "remeasure", false, "measure tau and tauI even if the measurement cache has them for this model, span and hardware")
	f.StringVar(&cfg.MeasureCacheDir, "measure-cache", "", "directory of the measurement cache (default: the user cache directory + /swarm/measure)")
	f.StringVar(&o.logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	return cmd
}

// runServe listens, loads and measures the span, prints the ready line and
// serves until ctx ends (SIGTERM/SIGINT), then drains and returns nil.
func runServe(ctx context.Context, out, errOut io.Writer, cfg server.Config, o serveOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", errUsage, o.logLevel)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level}))
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	srv, err := server.New(ctx, cfg, logger)
	if errors.Is(err, server.ErrBadConfig) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	defer srv.Close()
	url := "ws://" + ln.Addr().String() + api.InferencePath
	info := srv.ModelInfo()
	logger.Info("serving", "model", info.Name, "blocks", cfg.Blocks.String(), "url", url,
		"info", strings.TrimSuffix(strings.Replace(url, "ws://", "http://", 1), api.InferencePath)+api.InfoPath)
	if _, err := fmt.Fprintln(out, serveReadyPrefix+url); err != nil {
		return err
	}
	return srv.Serve(ctx, ln)
}
