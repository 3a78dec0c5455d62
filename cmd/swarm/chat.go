package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/client/chat"
	"github.com/swarmllm/swarm/client/local"
)

func newChatCmd() *cobra.Command {
	var (
		url, model, tok, apiKey string
		cfg                     chat.Config
	)
	cmd := &cobra.Command{
		Use:   "chat (--url http://HOST:PORT/v1 [--model NAME] | --model PATH|ORG/REPO [--tokenizer PATH]) [--system TEXT]",
		Short: "Chat with a model through swarm proxy (or any OpenAI-compatible endpoint), or in this process",
		Long: `chat reads one message per line from stdin and streams each reply of the model
to stdout, keeping the conversation: every message is sent with the turns
before it to the endpoint's /v1/chat/completions, where swarm proxy renders
the model's own chat template and stops at the model's end-of-turn token.

Without --url the whole model (--model: a file, a directory or a hub
repository ORG/REPO[@REVISION][:FILE], downloaded as swarm generate does)
runs in this process, which renders the conversation and stops exactly as
swarm proxy does; a model without a chat template gets the proxy's plain
fallback (the messages joined by newlines, continued as plain text).

"/reset" starts a new conversation (the --system prompt stays), "/exit" or
the end of the input (Ctrl-D) ends the chat. A "> " prompt is shown only
when stdin is a terminal, so the command works in pipes.

Examples:
  swarm proxy --model Qwen3.gguf --listen 127.0.0.1:8000 --bootstrap ... &
  swarm chat --url http://127.0.0.1:8000/v1 --system "You are terse."
  swarm chat --model Qwen/Qwen3-0.6B --temperature 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx, errOut := cmd.Context(), cmd.ErrOrStderr()
			var b chat.Backend
			switch {
			case url == "" && model == "":
				return fmt.Errorf("%w: --url (a swarm proxy) or --model (a model to run in this process) is required", errUsage)
			case url != "" && tok != "":
				return fmt.Errorf("%w: --tokenizer is for a model run in this process (without --url)", errUsage)
			case url != "":
				var opts []client.IngressOption
				if apiKey != "" {
					opts = append(opts, client.WithAPIKey(apiKey))
				}
				b, err = chat.Connect(ctx, url, model, opts...)
			default:
				o := generateOptions{model: model, tokenizer: tok}
				if err = o.resolveModel(ctx, errOut); err != nil {
					return err
				}
				var m *local.Model
				if m, err = local.Open(o.model, o.modelOptions()...); err != nil {
					return err
				}
				defer m.Close()
				b, err = local.NewChat(m.Head, m.Run, m.ChatTemplate) // without a tokenizer: ErrBadOption
			}
			if errors.Is(err, client.ErrBadOption) {
				return fmt.Errorf("%w: %w", errUsage, err)
			} else if err != nil {
				return err
			}
			s, err := chat.New(b, cfg)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return s.Run(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), errOut, chat.PromptFor(cmd.InOrStdin()))
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "base URL of the OpenAI-compatible endpoint, http://HOST:PORT/v1 (as swarm proxy listens)")
	f.StringVar(&model, "model", "", "with --url: the model id at the endpoint (default: the first model of its /v1/models); without: the model to run in this process,\n"+
		"a .gguf file, a llama2.c .bin checkpoint, a Hugging Face directory or a hub repository ORG/REPO[@REVISION][:FILE]")
	f.StringVar(&tok, "tokenizer", "", "without --url: tokenizer file (tokenizer.bin, tokenizer.model, tokenizer.json, .gguf) instead of the model's own")
	f.StringVar(&apiKey, "api-key", os.Getenv("SWARM_API_KEY"), "with --url: API key sent as a bearer token (default: $SWARM_API_KEY)")
	f.StringVar(&cfg.System, "system", "", "system prompt, the first message of every conversation")
	f.IntVar(&cfg.Sampling.MaxTokens, "max-tokens", 0, "most tokens per reply; 0 lets the endpoint decide (swarm proxy, and a local model: the rest of the context)")
	f.Float64Var(&cfg.Sampling.Temperature, "temperature", 0.7, "sampling temperature; 0 is greedy")
	f.Float64Var(&cfg.Sampling.TopP, "top-p", 0, "nucleus sampling threshold; 0 leaves the endpoint's default (off for a local model)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	return cmd
}
