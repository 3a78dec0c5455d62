package ingress_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
)

// countingTransport counts the GET /v1/info requests that pass through it.
type countingTransport struct{ infos atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Path == api.InfoPath {
		c.infos.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// metric reads one counter of the gateway's /metrics.
func metric(t *testing.T, gw *ingress.Gateway, name string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	gw.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	m := regexp.MustCompile(`(?m)^` + name + `\{model="stories260K"\} (\d+)$`).FindStringSubmatch(rec.Body.String())
	require.Lenf(t, m, 2, "%s not in /metrics", name)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// TestOpenProbesOnceAndRoutesOnce: opening a session through the gateway
// reads each server's info document in ONE probe round (two reads each,
// for the RTT) and runs WS-RR ONCE; the client opens the route the gateway
// chose (client.OpenPlan) instead of probing and routing again. Before,
// client.Open probed every server a second time and routed again.
func TestOpenProbesOnceAndRoutesOnce(t *testing.T) {
	urls := ingresstest.StartChain(t)
	ct := &countingTransport{}
	hc := &http.Client{Transport: ct}
	head := ingresstest.Head(t)
	src, err := ingress.NewStatic(urls, nil, client.WithHTTPClient(hc))
	require.NoError(t, err)
	gw := ingresstest.Gateway(t, urls, nil, func(cfg *ingress.Config) {
		cfg.Models = []ingress.Model{{Name: "stories260K", Head: head}}
		cfg.Source = src
		cfg.ClientOptions = []client.Option{client.WithHTTPClient(hc)}
	})

	sess, err := gw.Open(context.Background(), ingress.SessionRequest{Model: "stories260K", MaxLength: 64, API: "completions"})
	require.NoError(t, err)
	defer sess.Close()
	var text strings.Builder
	res, err := sess.Generate(context.Background(), ingress.GenerateParams{MaxTokens: 20, Sampler: blocks.SamplerConfig{}}, func(s string) error {
		text.WriteString(s)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 20, res.CompletionTokens)
	require.True(t, strings.HasPrefix(ingresstest.ReferenceText(t), text.String()), text.String())

	require.EqualValues(t, 2*len(urls), ct.infos.Load(), "one probe round: two info reads per server")
	require.Equal(t, 1, metric(t, gw, "swarm_ingress_probe_rounds_total"))
	require.Equal(t, 1, metric(t, gw, "swarm_ingress_routings_total"))
	require.Len(t, sess.Plan().Hops, 3)
}

// TestCachedCandidatesHonourNewBans: a server banned after the probe round
// (a session found it dead) is left out of the cached candidates at once,
// not after --refresh: `swarm bench churn` saw the proxy dial a SIGKILLed
// server for every request until its cache was refreshed.
func TestCachedCandidatesHonourNewBans(t *testing.T) {
	urls := ingresstest.StartChain(t)
	bans, err := client.NewBans(client.DefaultBanBase, client.DefaultBanMax)
	require.NoError(t, err)
	gw := ingresstest.Gateway(t, urls, nil, func(cfg *ingress.Config) {
		cfg.Bans = bans
		cfg.Refresh = time.Hour
	})
	m := gw.Models()[0]
	for _, c := range gw.Candidates(context.Background(), m, false) {
		require.NoError(t, c.Err, c.Endpoint.Inference)
	}
	dead := gw.Candidates(context.Background(), m, false)[1].Endpoint.Inference
	bans.Fail(dead, errors.New("connection refused"))
	for _, c := range gw.Candidates(context.Background(), m, false) {
		if c.Endpoint.Inference == dead {
			require.ErrorIs(t, c.Err, client.ErrBanned)
		} else {
			require.NoError(t, c.Err, c.Endpoint.Inference)
		}
	}
	require.Equal(t, 1, metric(t, gw, "swarm_ingress_probe_rounds_total"), "from the cache")
}
