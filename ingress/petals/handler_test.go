package petals_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/petals"
)

// dial opens the websocket API of a handler over the given block servers.
func dial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+petals.Path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	return ws
}

func start(t *testing.T, servers []string) string {
	t.Helper()
	hs := httptest.NewServer(petals.New(ingresstest.Gateway(t, servers, nil, nil)))
	t.Cleanup(hs.Close)
	return hs.URL
}

// exchange sends a message and reads replies until one has stop: true or
// ok: false.
func exchange(t *testing.T, ws *websocket.Conn, msg map[string]any) []petals.Reply {
	t.Helper()
	require.NoError(t, ws.WriteJSON(msg))
	var out []petals.Reply
	for {
		var r petals.Reply
		require.NoError(t, ws.ReadJSON(&r))
		out = append(out, r)
		if !r.OK || r.Stop == nil || *r.Stop {
			return out
		}
	}
}

// TestGenerateReference: an empty input, greedy, 200 new tokens in one
// reply, is REFERENCE.md section 2's text; then the same streamed token by
// token as chat.petals.dev's frontend does (max_new_tokens 1 and a
// stop_sequence), in a new session, up to and including the stop text.
func TestGenerateReference(t *testing.T) {
	ref := ingresstest.ReferenceText(t)
	url := start(t, ingresstest.StartChain(t))

	ws := dial(t, url)
	require.Equal(t, []petals.Reply{{OK: true}}, exchange(t, ws, map[string]any{"type": "open_inference_session", "model": "stories260K", "max_length": 512}))
	rs := exchange(t, ws, map[string]any{"type": "generate", "inputs": "", "max_new_tokens": 200, "do_sample": 0})
	require.Len(t, rs, 1)
	require.True(t, rs[0].OK, rs[0].Traceback)
	require.Equal(t, ref, *rs[0].Outputs)
	require.Equal(t, 200, *rs[0].TokenCount)

	ws = dial(t, url)
	exchange(t, ws, map[string]any{"type": "open_inference_session", "model": "stories260K", "max_length": 512})
	stop := "didn't know what to do."
	rs = exchange(t, ws, map[string]any{"type": "generate", "inputs": "", "max_new_tokens": 1, "do_sample": 0, "stop_sequence": stop})
	var text strings.Builder
	for i, r := range rs {
		require.True(t, r.OK, r.Traceback)
		require.Equal(t, i == len(rs)-1, *r.Stop)
		text.WriteString(*r.Outputs)
	}
	want := ref[:strings.Index(ref, stop)+len(stop)]
	require.Equal(t, want, text.String())
	require.Greater(t, len(rs), 40, "one reply per token")
}

// TestSessionContinues: generate calls continue one session; two calls of
// 30 tokens (the second without inputs) give the reference's first 60
// tokens, and the session then takes new inputs.
func TestSessionContinues(t *testing.T) {
	ref := ingresstest.ReferenceText(t)
	ws := dial(t, start(t, ingresstest.StartChain(t)))
	exchange(t, ws, map[string]any{"type": "open_inference_session", "max_length": 100})
	a := exchange(t, ws, map[string]any{"type": "generate", "inputs": "", "max_new_tokens": 30})
	b := exchange(t, ws, map[string]any{"type": "generate", "max_new_tokens": 30})
	got := *a[0].Outputs + *b[0].Outputs
	require.True(t, strings.HasPrefix(ref, got), "%q", got)
	require.Greater(t, len(got), 100)
	c := exchange(t, ws, map[string]any{"type": "generate", "inputs": " The end.", "max_new_tokens": 5})
	require.True(t, c[0].OK, c[0].Traceback)
	require.Equal(t, 5, *c[0].TokenCount)

	// 100 positions: 1 + 30 + 30 + 4 (" The end.") + 5 used; 40 more do not fit.
	d := exchange(t, ws, map[string]any{"type": "generate", "max_new_tokens": 40})
	require.False(t, d[0].OK)
	require.Contains(t, d[0].Traceback, "Maximum length exceeded")
}

// TestProtocolErrors checks the {ok: false, traceback} replies.
func TestProtocolErrors(t *testing.T) {
	url := start(t, ingresstest.StartChain(t))
	tests := []struct {
		name string
		msgs []map[string]any
		want string
	}{
		{"generate first", []map[string]any{{"type": "generate", "inputs": "a"}}, "first message must be of type open_inference_session"},
		{"no max_length", []map[string]any{{"type": "open_inference_session"}}, "needs max_length"},
		{"unknown model", []map[string]any{{"type": "open_inference_session", "model": "bloom", "max_length": 10}}, `unknown_model: ingress: unknown model: "bloom"`},
		{"no length", []map[string]any{{"type": "open_inference_session", "max_length": 10}, {"type": "generate", "inputs": ""}}, "needs max_new_tokens or max_length"},
		{"bad do_sample", []map[string]any{{"type": "open_inference_session", "max_length": 10}, {"type": "generate", "max_new_tokens": 1, "do_sample": "yes"}}, "do_sample yes"},
		{"bad temperature", []map[string]any{{"type": "open_inference_session", "max_length": 10}, {"type": "generate", "max_new_tokens": 1, "do_sample": 1, "temperature": -1}}, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := dial(t, url)
			var last []petals.Reply
			for _, m := range tt.msgs {
				last = exchange(t, ws, m)
			}
			require.False(t, last[len(last)-1].OK)
			require.Contains(t, last[len(last)-1].Traceback, tt.want)
		})
	}
}
