package server_test

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

func TestConfigValidate(t *testing.T) {
	ok := server.DefaultConfig()
	ok.Model, ok.Blocks = "m.bin", swarm.Span{Start: 0, End: 2}
	require.NoError(t, ok.Validate())
	tests := []struct {
		name   string
		modify func(*server.Config)
		want   string
	}{
		{"no model", func(c *server.Config) { c.Model = "" }, "--model is required"},
		{"no blocks", func(c *server.Config) { c.Blocks = swarm.Span{} }, "--blocks START:END is required"},
		{"empty span", func(c *server.Config) { c.Blocks = swarm.Span{Start: 3, End: 3} }, "3:3 is empty"},
		{"negative memory", func(c *server.Config) { c.MemoryBytes = -1 }, "--memory -1"},
		{"negative sessions", func(c *server.Config) { c.MaxSessions = -2 }, "--max-sessions -2"},
		{"negative latency", func(c *server.Config) { c.EmulateLatency = -1 }, "--emulate-latency"},
		{"negative drain", func(c *server.Config) { c.DrainTimeout = -1 }, "--drain-timeout"},
		{"bad listen", func(c *server.Config) { c.Listen = "7000" }, `--listen "7000"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.modify(&c)
			err := c.Validate()
			require.ErrorIs(t, err, server.ErrBadConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestNewRejectsSpanAndMemory(t *testing.T) {
	info := modelInfo(t)
	tests := []struct {
		name   string
		modify func(*server.Config)
		want   string
	}{
		{"span past the model", func(c *server.Config) { c.Blocks = swarm.Span{Start: 3, End: 6} }, "ends past the model's 5 blocks"},
		{"memory below the weights", func(c *server.Config) { c.MemoryBytes = 2*info.BlockBytes - 1 }, "need 363520 bytes (s_m*m) but memory is 363519"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Model, cfg.Blocks, cfg.MeasureCacheDir = stories(t), swarm.Span{Start: 0, End: 2}, t.TempDir()
			tt.modify(&cfg)
			_, err := server.New(context.Background(), cfg, nil)
			require.ErrorIs(t, err, server.ErrBadConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
	cfg := server.DefaultConfig()
	cfg.Model, cfg.Blocks = stories(t)+".missing", swarm.Span{Start: 0, End: 2}
	_, err := server.New(context.Background(), cfg, nil)
	require.ErrorContains(t, err, "stories260K.bin.missing")
}

// TestInfo checks GET /v1/info against what the server was given and
// measured, and that Serve advertises the listener's URL.
// TestInfo_ModelName: --model-name replaces the file's model name in
// what the server advertises (the registry entry is built from it).
func TestInfo_ModelName(t *testing.T) {
	srv := newServer(t, swarm.Span{Start: 0, End: 2}, func(c *server.Config) { c.ModelName = "tinystories-15m" })
	defer srv.Close()
	got := srv.Info()
	require.Equal(t, "tinystories-15m", got.Model)
	require.Equal(t, "tinystories-15m", got.ModelInfo.Name)
	require.Equal(t, "tinystories-15m", srv.ModelInfo().Name)
}

func TestInfo(t *testing.T) {
	info := modelInfo(t)
	srv := newServer(t, swarm.Span{Start: 1, End: 4}, func(c *server.Config) { c.MemoryBytes = 4 << 20 })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, srv.Close())
	}()

	resp, err := http.Get("http://" + ln.Addr().String() + api.InfoPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var got api.Info
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))

	url := "ws://" + ln.Addr().String() + api.InferencePath
	require.Equal(t, url, got.ID)
	require.Equal(t, []string{url}, got.Endpoints)
	require.Equal(t, "stories260K", got.Model)
	require.Equal(t, swarm.Span{Start: 1, End: 4}, got.Span)
	require.Equal(t, 5, got.ModelBlocks)
	require.Equal(t, &info, got.ModelInfo)
	require.Equal(t, info.CacheBytesPerToken, got.CacheBytesPerToken, "s_c per token as the server computes it")
	require.Equal(t, "cpu", got.Device)
	require.Contains(t, []string{"go", "avx2+q32i8+f16x8", "avx2+avx512", "avx2+avx512+vnni"}, got.Kernels,
		"the CPU engine's kernel set, as the server logs it")
	require.Equal(t, swarm.DTypeF32, got.CacheDType)
	require.Equal(t, swarm.DTypeF32, got.WeightDType, "stories260K.bin is llama2.c float32")
	require.Equal(t, int64(2*info.NKVHeads*info.HeadDim*4), got.CacheBytesPerToken, "float32 K and V")
	require.Equal(t, swarm.ProtocolVersion, got.ProtocolVersion)
	require.Equal(t, api.StateServing, got.State)
	require.Equal(t, 512, got.MaxLength)
	require.Equal(t, int64(4<<20), got.MemoryBytes)
	require.Equal(t, int64(4<<20)-3*info.BlockBytes, got.CacheBytesCapacity, "M - s_m*m")
	require.Equal(t, got.CacheBytesCapacity, got.CacheBytesFree)
	require.Empty(t, got.Sessions)
	require.Positive(t, got.Tau)
	tau, fit := srv.Tau()
	require.Equal(t, tau, got.Tau)
	require.Equal(t, fit, got.TauI)
	require.GreaterOrEqual(t, got.TauI.Intercept, 0.0)
	require.Positive(t, got.TauI.Slope)
	require.Equal(t, []int{1, 8, 32, 128}, got.Measurement.PrefillLengths)
	require.Len(t, got.Measurement.PrefillSeconds, 4)
	require.Equal(t, 9, got.Measurement.DecodeSteps)
	// i*255/9 for i = 1..9: steps spread over a cache of up to 255 positions.
	require.Equal(t, []int{28, 56, 85, 113, 141, 170, 198, 226, 255}, got.Measurement.DecodePositions)
	require.False(t, got.Measurement.Cached)
	require.Contains(t, got.Measurement.Hardware, "GOMAXPROCS=")
	var batches []int
	for _, bt := range got.TauBatch {
		batches = append(batches, bt.Batch)
		require.Positive(t, bt.Tau, "batch %d", bt.Batch)
	}
	require.Equal(t, []int{1, 2, 4, 8, 16}, batches, "tau as a function of the batch size")

	resp, err = http.Post("http://"+ln.Addr().String()+api.InfoPath, "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// TestMeasurementCache checks that a restart reads tau and tauI from the
// cache for the same model, span and hardware, that another span is
// measured anew, and that Remeasure forces a measurement.
func TestMeasurementCache(t *testing.T) {
	dir := t.TempDir()
	build := func(span swarm.Span, remeasure bool) *server.Server {
		return newServer(t, span, func(c *server.Config) { c.MeasureCacheDir, c.Remeasure = dir, remeasure })
	}
	first := build(swarm.Span{Start: 0, End: 2}, false)
	require.False(t, first.Info().Measurement.Cached)
	second := build(swarm.Span{Start: 0, End: 2}, false)
	require.True(t, second.Info().Measurement.Cached)
	tau1, fit1 := first.Tau()
	tau2, fit2 := second.Tau()
	require.Equal(t, tau1, tau2)
	require.Equal(t, fit1, fit2)
	require.False(t, build(swarm.Span{Start: 2, End: 5}, false).Info().Measurement.Cached, "another span")
	require.False(t, build(swarm.Span{Start: 0, End: 2}, true).Info().Measurement.Cached, "--remeasure")
	for _, s := range []*server.Server{first, second} {
		require.NoError(t, s.Close())
	}
}

// TestStepMatchesEngine runs a prefill and decode steps through a server
// session, over a websocket and over a byte stream, and checks the results
// are bit-identical to the engine run in this process.
func TestStepMatchesEngine(t *testing.T) {
	span := swarm.Span{Start: 1, End: 4}
	m, err := blocks.Open(stories(t))
	require.NoError(t, err)
	engine, err := m.LoadSpan(swarm.Span{Start: 0, End: 5})
	m.Close()
	require.NoError(t, err)
	defer engine.Close()

	s := serve(t, newServer(t, swarm.Span{Start: 0, End: 5}, nil))
	transports := map[string]func() *peer{
		"websocket": func() *peer { return s.dial(t) },
		"stream": func() *peer {
			a, b := net.Pipe()
			go s.srv.ServeConn(api.NewStream(b, 0, "pipe"))
			return newPeer(t, api.NewStream(a, 0, "pipe"))
		},
	}
	for name, connect := range transports {
		t.Run(name, func(t *testing.T) {
			local, err := engine.NewSession(span, 32)
			require.NoError(t, err)
			defer local.Close()
			p := connect()
			sid := p.open(openMsg(span, 32))
			for _, step := range []struct{ pos, n int }{{0, 5}, {5, 1}, {6, 1}, {3, 2}, {5, 1}} {
				x := hidden(step.n, step.pos)
				want, err := local.Forward(context.Background(), step.pos, x, step.n)
				require.NoError(t, err)
				p.send(&wire.Step{SessionID: sid, Position: step.pos, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: step.n, DModel: 64, Data: x}})
				r := expect[*wire.Result](p)
				require.Equal(t, step.pos, r.Position)
				require.Equal(t, sid, r.SessionID)
				require.GreaterOrEqual(t, r.Compute, 0.0)
				require.Equal(t, step.n, r.Hidden.NTokens)
				require.Equal(t, len(want), len(r.Hidden.Data))
				for i := range want {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(r.Hidden.Data[i]), "pos %d value %d", step.pos, i)
				}
			}
			p.send(&wire.Close{SessionID: sid})
			require.Equal(t, sid, expect[*wire.Closed](p).SessionID)
		})
	}
}

// TestManySessionsOneConnection interleaves two sessions on one connection
// over different spans, and checks each session keeps its own caches.
func TestManySessionsOneConnection(t *testing.T) {
	s := serve(t, newServer(t, swarm.Span{Start: 0, End: 5}, nil))
	p := s.dial(t)
	a := p.open(openMsg(swarm.Span{Start: 0, End: 5}, 16))
	b := p.open(openMsg(swarm.Span{Start: 2, End: 3}, 16))
	require.NotEqual(t, a, b)
	step := func(sid string, pos int) *wire.Result {
		p.send(&wire.Step{SessionID: sid, Position: pos, Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: 64, Data: hidden(1, pos)}})
		return expect[*wire.Result](p)
	}
	var outA, outB [][]float32
	for pos := range 3 {
		outA = append(outA, step(a, pos).Hidden.Data)
		outB = append(outB, step(b, pos).Hidden.Data)
	}
	require.NotEqual(t, outA[2], outB[2], "different spans give different outputs")
	require.Len(t, s.srv.Info().Sessions, 2)
	// Re-running position 2 of a gives the same output: its cache holds
	// positions 0 and 1 of a, untouched by b.
	require.Equal(t, outA[2], step(a, 2).Hidden.Data)
}
