package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/internal/testenv"
)

// runSwarmProcess runs the swarm binary as a real process and returns its
// stdout, stderr and exit status.
func runSwarmProcess(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.SwarmBinary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errOut.String(), code
}

// referenceText is section 2 of stories260K's REFERENCE.md: llama2.c's
// test_all.py expectation for 200 greedy tokens from an empty prompt.
func referenceText(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(testenv.SharedFile(t, "models", "stories260K", "REFERENCE.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)i\\.e\\. this text \\(200 generated tokens.*?```\n(.*?)\n```").FindSubmatch(raw)
	require.Len(t, m, 2, "section 2 text not found in REFERENCE.md")
	return string(m[1])
}

// TestGenerateLocalStories260K is the acceptance test of issue 2: the
// swarm binary, from an empty prompt at temperature 0 with 200 tokens,
// prints llama2.c's published text byte for byte (plus run.c's trailing
// newline), from the llama2.c checkpoint with tok512.bin and from the GGUF
// file with its embedded tokenizer.
func TestGenerateLocalStories260K(t *testing.T) {
	want := referenceText(t) + "\n"
	dir := testenv.SharedFile(t, "models", "stories260K")
	for name, args := range map[string][]string{
		"llama2c": {"--model", dir + "/stories260K.bin", "--tokenizer", dir + "/tok512.bin"},
		"gguf":    {"--model", dir + "/stories260K.gguf"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"generate", "--local", "--temperature", "0", "--max-tokens", "200"}, args...)
			out, errOut, code := runSwarmProcess(t, args...)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, want, out)
		})
	}
}

// TestGenerateLocalPrompt checks that the prompt is echoed and continued,
// and that a seeded sampled run is reproducible.
func TestGenerateLocalPrompt(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	base := []string{"generate", "--local", "--model", dir + "/stories260K.gguf", "--prompt", "Once upon a time", "--max-tokens", "30"}
	greedy, errOut, code := runSwarmProcess(t, append(base, "--temperature", "0")...)
	require.Equal(t, 0, code, errOut)
	// The greedy continuation of "Once upon a time" is section 1's text.
	ref := referenceText(t)
	require.Equal(t, ref[:len(greedy)-1], greedy[:len(greedy)-1])

	a, _, code := runSwarmProcess(t, append(base, "--temperature", "0.8", "--top-p", "0.9", "--top-k", "40", "--repetition-penalty", "1.1", "--seed", "42")...)
	require.Equal(t, 0, code)
	b, _, _ := runSwarmProcess(t, append(base, "--temperature", "0.8", "--top-p", "0.9", "--top-k", "40", "--repetition-penalty", "1.1", "--seed", "42")...)
	require.Equal(t, a, b)
	require.Regexp(t, `^Once upon a time`, a)
}

// TestGenerateFlagErrors checks the usage errors: exit status 2 and a
// message naming the problem.
func TestGenerateFlagErrors(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	model := dir + "/stories260K.gguf"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no mode", []string{"--model", model}, 2, "choose exactly one of --local, --servers or --bootstrap"},
		{"no model", []string{"--local"}, 2, "--model is required"},
		{"two modes", []string{"--local", "--servers", "ws://127.0.0.1:1", "--model", model}, 2, "choose exactly one"},
		{"bad temperature", []string{"--local", "--model", model, "--temperature", "-1"}, 2, "temperature -1"},
		{"bad top-p", []string{"--local", "--model", model, "--top-p", "2"}, 2, "top-p 2"},
		{"missing model file", []string{"--local", "--model", dir + "/nope.gguf"}, 1, "nope.gguf"},
		{"no tokenizer", []string{"--local", "--model", dir + "/stories260K.bin"}, 2, "pass --tokenizer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runSwarmProcess(t, append([]string{"generate"}, tt.args...)...)
			require.Equal(t, tt.code, code, "stdout %q stderr %q", out, errOut)
			require.Contains(t, errOut, tt.want)
		})
	}
}

// TestGenerateHelp checks that --help explains every flag.
func TestGenerateHelp(t *testing.T) {
	out, _, code := runSwarmProcess(t, "generate", "--help")
	require.Equal(t, 0, code)
	for _, flag := range []string{"--local", "--servers", "--bootstrap", "--model", "--tokenizer", "--prompt", "--max-tokens",
		"--temperature", "--top-p", "--top-k", "--repetition-penalty", "--seed", "--stats"} {
		require.Contains(t, out, flag)
	}
}

// referenceIDs is section 3 of stories260K's REFERENCE.md: the 256 greedy
// ids of "Once upon a time" (its 4 prompt ids first, BOS excluded).
func referenceIDs(t *testing.T) []int {
	t.Helper()
	raw, err := os.ReadFile(testenv.SharedFile(t, "models", "stories260K", "REFERENCE.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)The 256 greedy token ids[^\n]*\n\s*([0-9 ]+)\n`).FindSubmatch(raw)
	require.Len(t, m, 2, "section 3 ids not found in REFERENCE.md")
	var ids []int
	require.NoError(t, json.Unmarshal([]byte("["+strings.Join(strings.Fields(string(m[1])), ",")+"]"), &ids))
	require.Len(t, ids, 256)
	return ids
}

// generateJSONOutput runs `swarm generate --json` and decodes its one
// JSON object.
func generateJSONOutput(t *testing.T, args ...string) generateJSON {
	t.Helper()
	out, errOut, code := runSwarmProcess(t, append(args, "--json")...)
	require.Equal(t, 0, code, errOut)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var got generateJSON
	require.NoError(t, dec.Decode(&got), out)
	require.False(t, dec.More(), "one JSON object: %q", out)
	return got
}

// TestGenerateJSON: --json prints the prompt's ids (REFERENCE.md: "Once
// upon a time" -> [1, 403, 407, 261, 378]), the greedy ids (section 3) and
// their text (the continuation of section 1's text), and nothing else.
func TestGenerateJSON(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	ref := referenceIDs(t)
	got := generateJSONOutput(t, "generate", "--local", "--model", dir+"/stories260K.gguf", "--prompt", "Once upon a time",
		"--temperature", "0", "--max-tokens", "60")
	require.Equal(t, []int{1, 403, 407, 261, 378}, got.PromptIDs)
	require.Equal(t, ref[4:64], got.IDs)
	require.True(t, strings.HasPrefix(referenceText(t), "Once upon a time"+got.Text), got.Text)
	require.Greater(t, len(got.Text), 100)
}

// TestPromptTextWithoutBOS: the echoed prompt keeps its first token when
// the tokenizer puts no BOS first (Qwen3), and drops only a leading BOS
// (Gemma 3, stories260K).
func TestPromptTextWithoutBOS(t *testing.T) {
	for _, tc := range []struct{ model, text string }{{"qwen3", "Hello world"}, {"gemma3", "Hello world"}} {
		tok, err := tokenizer.Load(testenv.LenmlTokenizer(t, tc.model))
		require.NoError(t, err)
		ids, err := tok.Encode(tc.text, true)
		require.NoError(t, err)
		require.Equal(t, tc.text, blocks.PromptText(tok, ids), tc.model)
	}
	tok, err := tokenizer.Load(testenv.SharedFile(t, "models", "stories260K", "tok512.bin"))
	require.NoError(t, err)
	require.Equal(t, "Once upon a time", blocks.PromptText(tok, []int{1, 403, 407, 261, 378}))
}
