// Package ingresstest runs real swarm pieces in-process for the tests of the
// ingress packages and of the client's ingress API: block servers
// (server.Server behind loopback httptest servers) over the stories260K
// model of the shared data, and a Gateway over them. Only tests import it.
//
// This package must never be imported by production code, and never
// imports cmd/.
package ingresstest

import (
	"context"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// Stories returns the paths of stories260K.bin and tok512.bin in the shared
// models (the test skips when the shared directory is absent).
func Stories(tb testing.TB) (model, tokenizer string) {
	tb.Helper()
	return testenv.SharedFile(tb, "models", "stories260K", "stories260K.bin"),
		testenv.SharedFile(tb, "models", "stories260K", "tok512.bin")
}

// ReferenceText is section 2 of stories260K's REFERENCE.md: llama2.c's
// text for 200 greedy tokens from an empty prompt (third-party oracle).
func ReferenceText(tb testing.TB) string {
	tb.Helper()
	raw, err := os.ReadFile(testenv.SharedFile(tb, "models", "stories260K", "REFERENCE.md"))
	require.NoError(tb, err)
	m := regexp.MustCompile("(?s)i\\.e\\. this text \\(200 generated tokens.*?```\n(.*?)\n```").FindSubmatch(raw)
	require.Len(tb, m, 2, "section 2 text not found in REFERENCE.md")
	return string(m[1])
}

// Head loads stories260K's head (embeddings, norm, LM head, tokenizer).
func Head(tb testing.TB) blocks.Head {
	tb.Helper()
	model, tok := Stories(tb)
	m, err := blocks.Open(model, blocks.WithTokenizer(tok))
	require.NoError(tb, err)
	defer m.Close()
	h, err := m.LoadHead()
	require.NoError(tb, err)
	return h
}

// Server is an in-process block server.
type Server struct {
	Srv *server.Server
	HS  *httptest.Server
	// URL is ws://127.0.0.1:PORT/v1/inference.
	URL string
}

// StartServer runs a block server for span of stories260K on loopback;
// configure may adjust its Config (nil keeps the defaults). Cleanup shuts
// it down.
func StartServer(tb testing.TB, span swarm.Span, configure func(*server.Config)) *Server {
	tb.Helper()
	model, _ := Stories(tb)
	cfg := server.DefaultConfig()
	cfg.Model = model
	cfg.Blocks = span
	cfg.MeasureCacheDir = tb.TempDir()
	cfg.DrainTimeout = 0
	if configure != nil {
		configure(&cfg)
	}
	srv, err := server.New(context.Background(), cfg, nil)
	require.NoError(tb, err)
	hs := httptest.NewServer(srv.Handler())
	s := &Server{Srv: srv, HS: hs, URL: "ws" + hs.URL[len("http"):] + "/v1/inference"}
	tb.Cleanup(func() {
		srv.Shutdown(context.Background())
		hs.Close()
		srv.Close()
	})
	return s
}

// StartChain runs block servers for [0,2), [2,4), [4,5) of stories260K and
// returns their URLs.
func StartChain(tb testing.TB) []string {
	tb.Helper()
	var urls []string
	for _, sp := range []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}, {Start: 4, End: 5}} {
		urls = append(urls, StartServer(tb, sp, nil).URL)
	}
	return urls
}

// Gateway returns a gateway serving stories260K over the given block
// servers and replicas (static source); configure may adjust its Config.
func Gateway(tb testing.TB, servers, replicas []string, configure func(*ingress.Config)) *ingress.Gateway {
	tb.Helper()
	head := Head(tb)
	src, err := ingress.NewStatic(servers, replicas)
	require.NoError(tb, err)
	cfg := ingress.DefaultConfig()
	cfg.Models = []ingress.Model{{Name: head.Info().Name, Head: head, Created: time.Now().Unix()}}
	cfg.Source = src
	if configure != nil {
		configure(&cfg)
	}
	g, err := ingress.New(cfg)
	require.NoError(tb, err)
	tb.Cleanup(func() { g.Close() })
	return g
}
