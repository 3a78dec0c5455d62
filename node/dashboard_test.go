package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// dashboardSpans are five fixed spans of stories260K's 5 blocks; by hand,
// block 0 is hosted by 0:2 and 0:3, block 1 by 0:2, 0:3 and 1:4, block 2
// by 2:5, 0:3 and 1:4, block 3 by 2:5, 3:5 and 1:4, block 4 by 2:5 and 3:5.
var (
	dashboardSpans    = []swarm.Span{span(0, 2), span(2, 5), span(0, 3), span(3, 5), span(1, 4)}
	dashboardCoverage = []int{2, 3, 3, 3, 2}
)

// dashboardStartTimeout bounds the start of the five servers (loading the
// model under -race on a loaded machine).
const dashboardStartTimeout = 4 * time.Minute

// startDashboardSwarm runs len(spans) servers of stories260K on their own
// libp2p nodes (bootstrapped from one more node) with loopback websockets,
// started together, and returns their websocket URLs and peer ids once the
// first server's registry replica sees them all SERVING.
func startDashboardSwarm(t *testing.T, spans []swarm.Span) (urls, ids []string) {
	t.Helper()
	cache := t.TempDir()
	// A server is suspected only after 30 s of silence: under -race on a
	// loaded machine heartbeats come late, and the tests check a swarm
	// whose servers all serve. Heartbeats every second keep the load low.
	rc := registrytest.LoopbackConfig()
	rc.HeartbeatInterval, rc.AntiEntropyInterval = time.Second, time.Second
	rc.SuspectAfter, rc.LeftAfter, rc.Retention, rc.MaxClockSkew = 30*time.Second, time.Minute, 2*time.Minute, time.Second
	boot := joinMemberWith(t, registrytest.P2PConfig(nil), rc)
	var first *member
	var readies []<-chan Serving
	for i, s := range spans {
		m := joinMemberWith(t, registrytest.P2PConfig(boot.node), rc)
		if first == nil {
			first = m
		}
		cfg := pinnedServerConfig(t, cache, boot) // no tau measurement: fast under -race
		cfg.Auto, cfg.Server.Blocks, cfg.Server.Listen, cfg.Server.MemoryBytes = false, s, "127.0.0.1:0", 0
		cfg.Provider = "volunteer-" + strconv.Itoa(i+1)
		cfg.LoadRefresh = 0
		_, ready, _ := runServer(t, m, cfg)
		readies = append(readies, ready)
	}
	deadline := time.After(dashboardStartTimeout)
	for i, ready := range readies {
		select {
		case sv := <-ready:
			urls, ids = append(urls, sv.URL), append(ids, sv.ID)
		case <-deadline:
			t.Fatalf("server %d (span %v) did not start within %v", i, spans[i], dashboardStartTimeout)
		}
	}
	// Wait until the first server's replica has every server SERVING.
	ctx, cancel := context.WithTimeout(t.Context(), dashboardStartTimeout)
	defer cancel()
	events := first.reg.Watch(ctx)
	for {
		serving := 0
		for _, e := range first.reg.Snapshot() {
			if e.State == swarm.StateServing {
				serving++
			}
		}
		if serving == len(spans) {
			return urls, ids
		}
		select {
		case <-events:
		case <-ctx.Done():
			t.Fatalf("the first server's registry shows %d of %d servers SERVING", serving, len(spans))
		}
	}
}

// pageBase is the http:// base of a server's websocket URL.
func pageBase(t *testing.T, wsURL string) string {
	t.Helper()
	base, ok := strings.CutSuffix(strings.Replace(wsURL, "ws://", "http://", 1), "/v1/inference")
	require.True(t, ok, "websocket URL %q", wsURL)
	return base
}

// findAll returns the elements under n whose class attribute lists class.
func findAll(n *html.Node, class string) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode {
		for _, a := range n.Attr {
			if a.Key == "class" && strings.Contains(" "+a.Val+" ", " "+class+" ") {
				out = append(out, n)
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, findAll(c, class)...)
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// TestDashboard_Chromium loads GET / of one server of a live 5-server
// swarm in headless chromium and checks the DOM the page's script drew:
// one model, 5 server rows (one per peer id), 5 coverage cells with the
// servers per block counted by hand, after one session ran through. The screenshot is kept as
// dashboard-5-servers.png in testenv.ArtifactDir ($SWARM_ARTIFACTS, else
// $TMPDIR/swarm-artifacts).
func TestDashboard_Chromium(t *testing.T) {
	bin := testenv.Chromium(t)
	urls, ids := startDashboardSwarm(t, dashboardSpans)
	runSession(t, urls) // the table then shows tokens served
	page := pageBase(t, urls[2]) + "/"

	doc, err := html.Parse(strings.NewReader(testenv.HeadlessChromium(t, bin, page, "--dump-dom")))
	require.NoError(t, err)
	models := findAll(doc, "model")
	require.Len(t, models, 1, "model sections")
	require.Equal(t, "stories260K", attr(models[0], "data-model"))
	rows := findAll(doc, "server-row")
	require.Len(t, rows, len(ids), "server rows")
	var rowIDs []string
	for _, r := range rows {
		rowIDs = append(rowIDs, attr(r, "data-id"))
	}
	require.ElementsMatch(t, ids, rowIDs)
	cells := findAll(doc, "cov-cell")
	require.Len(t, cells, 5, "coverage cells, one per block")
	for b, c := range cells {
		require.Equal(t, strconv.Itoa(b), attr(c, "data-block"))
		require.Equal(t, strconv.Itoa(dashboardCoverage[b]), attr(c, "data-servers"), "block %d", b)
	}
	require.Len(t, findAll(doc, "state-serving"), len(ids), "every server's state badge says serving")
	reach := findAll(doc, "reach")
	require.Len(t, reach, len(ids), "a reachability cell per server")
	for _, c := range reach {
		require.NotNil(t, c.FirstChild)
		require.Equal(t, "direct", c.FirstChild.Data, "loopback servers reach each other directly")
	}

	shot := filepath.Join(testenv.ArtifactDir(t), "dashboard-5-servers.png")
	if err := os.Remove(shot); err != nil && !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err, "removing the previous screenshot")
	}
	testenv.HeadlessChromium(t, bin, page, "--screenshot="+shot)
	fi, err := os.Stat(shot)
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(10_000), "a 1400x900 screenshot")
	t.Logf("screenshot: %s", shot)
}

// getBody GETs url and returns its body (status 200 required).
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, b)
	return string(b)
}

// metricValue is the value of the sample line "NAME VALUE" (no labels),
// or -1 when absent.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, line)
			return f
		}
	}
	return -1
}

// runSession runs one session of 4 positions through the servers at urls
// (a prompt of 3, then 1) and returns its chain's servers (URLs).
func runSession(t *testing.T, urls []string) map[string]bool {
	t.Helper()
	cl, err := client.New(loadHead(t), urls)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), p2pTimeout)
	defer cancel()
	sess, err := cl.Open(ctx, 16)
	require.NoError(t, err)
	d := 64 // stories260K's d_model
	_, err = sess.Forward(ctx, 0, make([]float32, 3*d), 3)
	require.NoError(t, err)
	_, err = sess.Forward(ctx, 3, make([]float32, d), 1)
	require.NoError(t, err)
	hops := map[string]bool{}
	for _, h := range sess.Chain() {
		hops[h.Server] = true
	}
	require.GreaterOrEqual(t, len(hops), 2, "no server hosts all 5 blocks")
	require.NoError(t, sess.Close())
	return hops
}

// TestFiveServers_StateAndMetrics reads GET /api/v1/state of one server
// of a live 5-server swarm (every server by peer id, the coverage counted
// by hand, all cache free, the node itself); then it runs one session of 4
// positions (a prompt of 3, then 1) and reads every server's GET /metrics
// and /api/v1/state: each hop of the chain computed 4 token rows, the
// others none; the collectors named in server.NewMetrics and the Go and
// process collectors are there.
func TestFiveServers_StateAndMetrics(t *testing.T) {
	urls, ids := startDashboardSwarm(t, dashboardSpans)
	resp, err := http.Get(pageBase(t, urls[0]) + "/api/v1/state")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st ingress.State
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.NotNil(t, st.Node)
	require.Equal(t, ids[0], st.Node.ID)
	require.Equal(t, "server", st.Node.Role)
	require.Equal(t, swarm.Version, st.Node.Version)
	require.Len(t, st.Models, 1)
	m := st.Models[0]
	require.Equal(t, "stories260K", m.Name)
	require.Equal(t, 5, m.Blocks)
	require.Equal(t, dashboardCoverage, m.Coverage)
	require.Equal(t, "ok", m.Health)
	var got []string
	for _, s := range m.Servers {
		got = append(got, s.ID)
		require.Equal(t, "serving", s.State)
		require.Equal(t, "cpu", s.Device)
		require.Equal(t, swarm.Version, s.Version)
		require.Positive(t, s.StartedAt)
		require.Positive(t, s.Tau)
		require.True(t, strings.HasPrefix(s.Provider, "volunteer-"), s.Provider)
	}
	require.ElementsMatch(t, ids, got)
	for b, n := range m.Coverage {
		// No session is open: every server's cache is free, headroom 1 each.
		require.InDelta(t, float64(n), m.Headroom[b], 1e-9, "block %d", b)
	}

	hops := runSession(t, urls)

	for i, u := range urls {
		want := 0.0
		if hops[u] {
			want = 4
		}
		text := getBody(t, pageBase(t, u)+"/metrics")
		require.Equal(t, want, metricValue(t, text, "swarm_server_tokens_total"), "server %d (%s)", i, u)
		for _, name := range []string{"swarm_server_sessions", "swarm_server_step_queue", "swarm_server_cache_bytes_free",
			"swarm_server_step_seconds_count", "swarm_server_batch_seconds_count", "swarm_server_batch_rows_count",
			"swarm_server_sessions_opened_total", "go_goroutines", "process_cpu_seconds_total"} {
			require.GreaterOrEqual(t, metricValue(t, text, name), 0.0, "server %d: %s missing", i, name)
		}
		if hops[u] {
			require.Equal(t, 2.0, metricValue(t, text, "swarm_server_step_seconds_count"), "two steps")
			require.Equal(t, 1.0, metricValue(t, text, "swarm_server_sessions_opened_total"))
			require.Contains(t, text, `swarm_server_bytes_total{direction="in"}`)
			require.Contains(t, text, `swarm_server_bytes_total{direction="out"}`)
		}
		var st ingress.State
		require.NoError(t, json.Unmarshal([]byte(getBody(t, pageBase(t, u)+"/api/v1/state")), &st))
		for _, s := range st.Models[0].Servers {
			if s.ID == ids[i] {
				require.Equal(t, int64(want), s.TokensServed, "server %d's own row is live", i)
			}
		}
	}
}
