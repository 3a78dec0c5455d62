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
	require.Contains(t, errOut, "--url (a swarm proxy) or --model (a model to run in this process) is required")
	_, errOut, code = runSwarmProcess(t, "chat", "--url", "http://127.0.0.1:1", "--tokenizer", "tok.bin")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--tokenizer is for a model run in this process")
	_, errOut, code = runSwarmProcess(t, "chat", "--model", stories260K(t)[1])
	require.Equal(t, 2, code, "a llama2.c checkpoint without its tokenizer")
	require.Contains(t, errOut, "the model comes without a tokenizer: give a tokenizer file")

	_, errOut, code = runSwarmProcess(t, "chat", "--url", "ftp://x")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "want http://HOST:PORT")

	proxy := startProxyProc(t, "--servers", strings.Join(startChainProcs(t), ","))
	out, errOut := runChat(t, "hi\n", "--url", proxy.url+"/v1", "--model", "nope", "--temperature", "0")
	require.Equal(t, "\n", out)
	require.Contains(t, errOut, "HTTP 404 model_not_found")

	out, _, code = runSwarmProcess(t, "chat", "--help")
	require.Equal(t, 0, code)
	for _, flag := range []string{"--url", "--model", "--tokenizer", "ORG/REPO", "--system", "--max-tokens", "--temperature", "/reset", "/exit"} {
		require.Contains(t, out, flag)
	}
}

// TestChatLocal is issue 11's local `swarm chat`: with --model and no
// --url, stories260K runs in the chat's own process and the transcript is
// TestChatEndToEnd's through a proxy: the plain fallback of a model
// without a chat template, each reply the greedy continuation of the
// conversation so far that `swarm generate --local` computes, /reset,
// /exit and --system the same.
func TestChatLocal(t *testing.T) {
	local := func(prompt string) string {
		return generateJSONOutput(t, append([]string{"generate", "--local", "--prompt", prompt, "--temperature", "0", "--max-tokens", "12"}, stories260K(t)...)...).Text
	}
	first := local("Once upon a time")
	require.True(t, strings.HasPrefix(referenceText(t), "Once upon a time"+first), first)
	third := local("Once upon a time\n" + first + "\nLily")

	flags := append(stories260K(t), "--temperature", "0", "--max-tokens", "12")
	out, errOut := runChat(t, "Once upon a time\n/reset\nOnce upon a time\n\nLily\n/exit\nnever sent\n", flags...)
	require.Equal(t, first+"\n"+first+"\n"+third+"\n", out)
	require.Equal(t, "(new conversation)\n", errOut)

	out, _ = runChat(t, "Lily", append(flags, "--system", "Once upon a time")...)
	require.Equal(t, local("Once upon a time\nLily")+"\n", out)
}
