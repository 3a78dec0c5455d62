package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/client/chat"
)

func newChatCmd() *cobra.Command {
	var (
		url, model, apiKey string
		cfg                chat.Config
	)
	cmd := &cobra.Command{
		Use:   "chat --url http://HOST:PORT/v1 [--model NAME] [--system TEXT]",
		Short: "Chat with a model through swarm proxy (or any OpenAI-compatible endpoint)",
		Long: `chat reads one message per line from stdin and streams each reply of the model
to stdout, keeping the conversation: every message is sent with the turns
before it to the endpoint's /v1/chat/completions, where swarm proxy renders
the model's own chat template and stops at the model's end-of-turn token.

"/reset" starts a new conversation (the --system prompt stays), "/exit" or
the end of the input (Ctrl-D) ends the chat. A "> " prompt is shown only
when stdin is a terminal, so the command works in pipes.

Example:
  swarm proxy --model Qwen3.gguf --listen 127.0.0.1:8000 --bootstrap ... &
  swarm chat --url http://127.0.0.1:8000/v1 --system "You are terse."`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				return fmt.Errorf("%w: --url is required", errUsage)
			}
			var opts []client.IngressOption
			if apiKey != "" {
				opts = append(opts, client.WithAPIKey(apiKey))
			}
			ing, err := client.NewIngress(strings.TrimSuffix(strings.TrimSuffix(url, "/"), "/v1"), opts...)
			if err != nil {
				return fmt.Errorf("%w: --url: %w", errUsage, err)
			}
			ctx := cmd.Context()
			if cfg.Model = model; model == "" {
				if cfg.Model, err = chat.FirstModel(ctx, ing); err != nil {
					return err
				}
			}
			s, err := chat.New(ing, cfg)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			prompt := ""
			if f, ok := cmd.InOrStdin().(*os.File); ok && isatty.IsTerminal(f.Fd()) {
				prompt = "> "
			}
			return s.Run(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), prompt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "base URL of the OpenAI-compatible endpoint, http://HOST:PORT/v1 (as swarm proxy listens; required)")
	f.StringVar(&model, "model", "", "model id at the endpoint (default: the first model of its /v1/models)")
	f.StringVar(&apiKey, "api-key", os.Getenv("SWARM_API_KEY"), "API key sent as a bearer token (default: $SWARM_API_KEY)")
	f.StringVar(&cfg.System, "system", "", "system prompt, the first message of every conversation")
	f.IntVar(&cfg.Sampling.MaxTokens, "max-tokens", 0, "most tokens per reply; 0 lets the endpoint decide (swarm proxy: the rest of the context)")
	f.Float64Var(&cfg.Sampling.Temperature, "temperature", 0.7, "sampling temperature; 0 is greedy")
	f.Float64Var(&cfg.Sampling.TopP, "top-p", 0, "nucleus sampling threshold; 0 leaves the endpoint's default")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	return cmd
}
