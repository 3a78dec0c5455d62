package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// tokenizeOptions are the flags of `swarm tokenize`.
type tokenizeOptions struct {
	tokenizer string
	text      string
	noBOS     bool
}

const tokenizeLong = `tokenize encodes TEXT with a tokenizer and prints the token ids as a JSON
array on one line, with the special tokens the model puts around a text
(--no-bos leaves them out). SentencePiece tokenizers (tokenizer.model,
tokenizer.bin, GGUF "llama") follow llama2.c's encode(text, bos=1, eos=0):
BOS, a dummy-prefix space before non-empty text, each UTF-8 character looked
up as a piece (else its bytes as byte pieces <0xXX>), then best-score pair
merges. Hugging Face tokenizer.json files (and GGUF "gpt2") give the ids of
transformers' encode(text): added tokens such as <|eot_id|> matched first,
then the normalizer, the pre-tokenizer and merges by rank; BOS as the
model's post-processor and tokenizer_config.json (GGUF: add_bos_token) say
(Gemma 3: <bos>; Qwen: none).

The tokenizer kind is chosen from --tokenizer:
  DIR               its tokenizer.model, else its tokenizer.json
  *.gguf            the tokenizer embedded in a GGUF model (llama, gpt2)
  *.model           SentencePiece ModelProto (BPE, e.g. Llama 2)
  *.json            Hugging Face tokenizer.json: SentencePiece-style BPE
                    (Llama 2, Gemma 3) or byte-level BPE (Llama 3, Qwen2,
                    Qwen3), with the tokenizer_config.json beside it
  anything else     llama2.c tokenizer.bin
Files without those extensions are recognised by their first bytes.

Example:
  swarm tokenize --tokenizer tokenizer.model --text "I believe the meaning of life is"
  [1,306,4658,278,6593,310,2834,338]`

func newTokenizeCmd() *cobra.Command {
	var o tokenizeOptions
	cmd := &cobra.Command{
		Use:   "tokenize --tokenizer PATH --text TEXT",
		Short: "Print the token ids of a text as a JSON array",
		Long:  tokenizeLong,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: unexpected argument %q (pass the text with --text)", errUsage, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.tokenizer == "" {
				return fmt.Errorf("%w: --tokenizer is required", errUsage)
			}
			if !cmd.Flags().Changed("text") {
				return fmt.Errorf("%w: --text is required (use --text \"\" for the empty text)", errUsage)
			}
			return runTokenize(cmd, o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	f := cmd.Flags()
	f.StringVar(&o.tokenizer, "tokenizer", "", "tokenizer file or directory: llama2.c tokenizer.bin, SentencePiece tokenizer.model, Hugging Face tokenizer.json, a GGUF model, or a directory holding tokenizer.model or tokenizer.json (required)")
	f.StringVar(&o.text, "text", "", "the text to encode, as UTF-8; may be empty (required)")
	f.BoolVar(&o.noBOS, "no-bos", false, "leave out the special tokens (BOS) that otherwise come with the text")
	return cmd
}

func runTokenize(cmd *cobra.Command, o tokenizeOptions) error {
	tok, err := tokenizer.Load(o.tokenizer)
	if err != nil {
		return err
	}
	ids, err := tok.Encode(o.text, !o.noBOS)
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []int{} // print [], not null
	}
	line, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", line)
	return err
}
