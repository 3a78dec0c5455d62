package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// runChat runs `swarm chat` with stdin from a pipe and returns its stdout
// and stderr.
func runChat(t *testing.T, stdin string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(testenv.SwarmBinary(t), append([]string{"chat"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), errOut.String())
	return out.String(), errOut.String()
}

// TestChatEndToEnd is issue 11's `swarm chat` over a real swarm: three
// `swarm serve` processes of stories260K behind `swarm proxy`, messages
// piped in. stories260K has no chat template, so the proxy's plain
// fallback joins the conversation with "\n": each reply must be the
// greedy continuation of the conversation so far as `swarm generate
// --local` computes it in one process, the first one the continuation of
// "Once upon a time" in REFERENCE.md; /reset forgets the turns (the same
// first reply again), the system prompt starts every conversation, and
// /exit ends the chat before the next line.
func TestChatEndToEnd(t *testing.T) {
	proxy := startProxyProc(t, "--servers", strings.Join(startChainProcs(t), ","))
	url := proxy.url + "/v1"
	local := func(prompt string) string {
		return generateJSONOutput(t, append([]string{"generate", "--local", "--prompt", prompt, "--temperature", "0", "--max-tokens", "12"}, stories260K(t)...)...).Text
	}
	first := local("Once upon a time")
	require.True(t, strings.HasPrefix(referenceText(t), "Once upon a time"+first), first)
	third := local("Once upon a time\n" + first + "\nLily")
	require.NotContains(t, first+third, "\n", "one reply per line below")

	out, errOut := runChat(t, "Once upon a time\n/reset\nOnce upon a time\n\nLily\n/exit\nnever sent\n",
		"--url", url, "--temperature", "0", "--max-tokens", "12")
	require.Equal(t, first+"\n"+first+"\n"+third+"\n", out)
	require.Equal(t, "(new conversation)\n", errOut)

	// A system prompt is the first message; Ctrl-D (end of input) ends
	// the chat.
	out, _ = runChat(t, "Lily", "--url", url, "--model", "stories260K", "--system", "Once upon a time",
		"--temperature", "0", "--max-tokens", "12")
	require.Equal(t, local("Once upon a time\nLily")+"\n", out)
}

// TestChatErrors: an unknown model is reported on stderr and the chat
// goes on; a missing --url is a usage error (exit status 2).
func TestChatErrors(t *testing.T) {
	_, errOut, code := runSwarmProcess(t, "chat")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--url is required")

	_, errOut, code = runSwarmProcess(t, "chat", "--url", "ftp://x")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "want http://HOST:PORT")

	proxy := startProxyProc(t, "--servers", strings.Join(startChainProcs(t), ","))
	out, errOut := runChat(t, "hi\n", "--url", proxy.url+"/v1", "--model", "nope", "--temperature", "0")
	require.Equal(t, "\n", out)
	require.Contains(t, errOut, "HTTP 404 model_not_found")

	out, _, code = runSwarmProcess(t, "chat", "--help")
	require.Equal(t, 0, code)
	for _, flag := range []string{"--url", "--model", "--system", "--max-tokens", "--temperature", "/reset", "/exit"} {
		require.Contains(t, out, flag)
	}
}
