package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// hfBPEFile is the tokenizer.json of a BPE model
// (https://huggingface.co/docs/tokenizers/api/models#tokenizers.models.BPE)
// as LoadRankedBPE reads it.
type hfBPEFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"` // all added tokens decode to their content; special ones are control tokens
		LStrip  bool   `json:"lstrip"`
		RStrip  bool   `json:"rstrip"`
	} `json:"added_tokens"`
	Normalizer    *hfComponent `json:"normalizer"`
	PreTokenizer  *hfComponent `json:"pre_tokenizer"`
	PostProcessor *hfComponent `json:"post_processor"`
	Decoder       *hfComponent `json:"decoder"`
	Model         struct {
		Type         string          `json:"type"`
		Vocab        json.RawMessage `json:"vocab"` // {"token": id}; other models have other shapes
		Merges       json.RawMessage `json:"merges"`
		UnkToken     *string         `json:"unk_token"`
		ByteFallback bool            `json:"byte_fallback"`
		IgnoreMerges bool            `json:"ignore_merges"`
		FuseUnk      bool            `json:"fuse_unk"`
		Dropout      *float64        `json:"dropout"`
		Prefix       *string         `json:"continuing_subword_prefix"`
		Suffix       *string         `json:"end_of_word_suffix"`
	} `json:"model"`
}

// hfComponent is a normalizer, pre-tokenizer, post-processor or decoder of
// tokenizer.json: the fields of every type this package runs.
type hfComponent struct {
	Type          string         `json:"type"`
	Normalizers   []*hfComponent `json:"normalizers"`   // Sequence
	PreTokenizers []*hfComponent `json:"pretokenizers"` // Sequence
	Decoders      []*hfComponent `json:"decoders"`      // Sequence
	Processors    []*hfComponent `json:"processors"`    // Sequence
	Pattern       *struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"` // Split, Replace
	Behavior       string `json:"behavior"`         // Split
	Invert         bool   `json:"invert"`           // Split
	Content        string `json:"content"`          // Replace, Strip
	Prepend        string `json:"prepend"`          // Prepend
	AddPrefixSpace bool   `json:"add_prefix_space"` // ByteLevel
	UseRegex       *bool  `json:"use_regex"`        // ByteLevel, default true
	Start          int    `json:"start"`            // Strip
	Stop           int    `json:"stop"`             // Strip
	Single         []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"` // TemplateProcessing
	SpecialTokens map[string]struct {
		Tokens []string `json:"tokens"`
	} `json:"special_tokens"` // TemplateProcessing
}

// hfTokenizerConfig is the part of tokenizer_config.json (beside
// tokenizer.json) that says which tokens are BOS and EOS and whether a text
// gets them.
type hfTokenizerConfig struct {
	BOSToken    json.RawMessage `json:"bos_token"` // "text", {"content": "text"} or null
	EOSToken    json.RawMessage `json:"eos_token"`
	AddBOSToken *bool           `json:"add_bos_token"`
	AddEOSToken *bool           `json:"add_eos_token"`
}

// LoadRankedBPE reads a Hugging Face tokenizer.json whose model is BPE
// (byte-level like Llama 3, Qwen2 and Qwen3, or SentencePiece-style like
// Gemma 3) and, when present, the tokenizer_config.json beside it. Merges
// may be "a b" strings or ["a", "b"] pairs.
//
// BOS and EOS are tokenizer_config.json's bos_token and eos_token, else
// BOS is the first special token of the post-processor's template. With
// addBOS, Encode puts the template's special tokens around the text
// (TemplateProcessing; ByteLevel adds none), except that an explicit
// add_bos_token / add_eos_token in tokenizer_config.json decides whether
// BOS / EOS are among them (as transformers' Llama and Gemma tokenizers
// do).
//
// It runs the normalizers NFC, NFD, NFKC, NFKD, Replace, Prepend and
// Sequence; the pre-tokenizers Split, ByteLevel and Sequence; the decoders
// ByteLevel, Replace, ByteFallback, Fuse, Strip and Sequence. Other
// components, dropout, subword prefixes and suffixes give ErrUnsupported;
// a malformed file ErrFormat. Added tokens are matched in the raw text
// whatever their normalized flag, as transformers.js does (Hugging Face
// tokenizers matches normalized ones after normalizing; the files this
// package is tested with have none).
func LoadRankedBPE(path string) (*RankedBPE, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: read tokenizer.json: %w", err)
	}
	return loadRankedBPE(path, data)
}

// loadRankedBPE is LoadRankedBPE of the file's content.
func loadRankedBPE(path string, data []byte) (*RankedBPE, error) {
	var f hfBPEFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: want a tokenizer.json object: %w", ErrFormat, path, err)
	}
	var cfg hfTokenizerConfig
	cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	if data, err := os.ReadFile(cfgPath); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrFormat, cfgPath, err)
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("tokenizer: read tokenizer_config.json: %w", err)
	}
	eog, err := configEOSIDs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	t, err := f.ranked(cfg, eog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

func (f *hfBPEFile) ranked(cfg hfTokenizerConfig, eog []int) (*RankedBPE, error) {
	m := &f.Model
	switch {
	case m.Type != "BPE" && m.Type != "":
		return nil, fmt.Errorf("%w: model type %q, want \"BPE\"", ErrUnsupported, m.Type)
	case len(m.Vocab) == 0 || string(m.Vocab) == "null":
		return nil, fmt.Errorf("%w: model has no vocab", ErrFormat)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, fmt.Errorf("%w: BPE dropout %g", ErrUnsupported, *m.Dropout)
	case m.Prefix != nil && *m.Prefix != "", m.Suffix != nil && *m.Suffix != "":
		return nil, fmt.Errorf("%w: continuing_subword_prefix or end_of_word_suffix", ErrUnsupported)
	}
	s := rankedSpec{byteFallback: m.ByteFallback, ignoreMerges: m.IgnoreMerges, fuseUnk: m.FuseUnk, eog: eog}
	if m.UnkToken != nil {
		s.unk = *m.UnkToken
	}
	var vocab map[string]int
	if err := json.Unmarshal(m.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("%w: model.vocab: want {\"token\": id}: %w", ErrFormat, err)
	}
	for tok, id := range vocab {
		if id < 0 || id > 1<<30 {
			return nil, fmt.Errorf("%w: token %q has id %d", ErrFormat, tok, id)
		}
		if id >= len(s.tokens) {
			s.tokens = append(s.tokens, make([]string, id+1-len(s.tokens))...)
		}
		if s.tokens[id] != "" {
			return nil, fmt.Errorf("%w: tokens %q and %q share id %d", ErrFormat, s.tokens[id], tok, id)
		}
		s.tokens[id] = tok
	}
	var err error
	if s.merges, err = parseMerges(m.Merges); err != nil {
		return nil, err
	}
	for _, a := range f.AddedTokens {
		s.added = append(s.added, addedToken{id: a.ID, content: a.Content, lstrip: a.LStrip, rstrip: a.RStrip, control: a.Special || looksSpecial(a.Content)})
	}
	if s.normalize, err = f.Normalizer.normalizer(); err != nil {
		return nil, err
	}
	if s.pre, err = f.PreTokenizer.preTokenizer(); err != nil {
		return nil, err
	}
	if err := f.Decoder.decoder(&s); err != nil {
		return nil, err
	}
	prefix, suffix, err := f.PostProcessor.template()
	if err != nil {
		return nil, err
	}
	bos, err := configToken(cfg.BOSToken, "bos_token")
	if err != nil {
		return nil, err
	}
	eos, err := configToken(cfg.EOSToken, "eos_token")
	if err != nil {
		return nil, err
	}
	if bos == "" && cfg.BOSToken == nil && len(prefix) > 0 {
		bos = prefix[0]
	}
	if cfg.AddBOSToken != nil && bos != "" {
		prefix = without(prefix, bos)
		if *cfg.AddBOSToken {
			prefix = append([]string{bos}, prefix...)
		}
	}
	if cfg.AddEOSToken != nil && eos != "" {
		suffix = without(suffix, eos)
		if *cfg.AddEOSToken {
			suffix = append(suffix, eos)
		}
	}
	// Special tokens by content: an added token wins over the model's
	// token of the same text, as in RankedBPE's vocabulary.
	id := func(what, content string) (int, error) {
		if content == "" {
			return -1, nil
		}
		for _, a := range s.added {
			if a.content == content {
				return a.id, nil
			}
		}
		if id, ok := vocab[content]; ok {
			return id, nil
		}
		return -1, fmt.Errorf("%w: %s %q is not in the vocabulary", ErrFormat, what, content)
	}
	if s.bos, err = id("BOS token", bos); err != nil {
		return nil, err
	}
	if s.eos, err = id("EOS token", eos); err != nil {
		return nil, err
	}
	s.eot = -1
	for _, list := range []struct {
		contents []string
		ids      *[]int
	}{{prefix, &s.prefix}, {suffix, &s.suffix}} {
		for _, c := range list.contents {
			x, err := id("special token", c)
			if err != nil {
				return nil, err
			}
			*list.ids = append(*list.ids, x)
		}
	}
	return newRankedBPE(s)
}

func without(list []string, x string) []string {
	var out []string
	for _, s := range list {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

// parseMerges reads model.merges: "a b" strings (split at the first space
// after the first character, as llama.cpp does) or ["a", "b"] pairs
// (tokenizers >= 0.20, which allows spaces in tokens).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var pairs [][2]string
	if inner := bytes.TrimLeft(raw[1:], " \t\r\n"); raw[0] == '[' && len(inner) > 0 && inner[0] == '[' {
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, fmt.Errorf("%w: model.merges: want [\"a\", \"b\"] pairs: %w", ErrFormat, err)
		}
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("%w: model.merges: want \"a b\" strings or [\"a\", \"b\"] pairs: %w", ErrFormat, err)
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		var ok bool
		if pairs[i], ok = splitMerge(l); !ok {
			return nil, fmt.Errorf("%w: merge %d %q: want two tokens separated by a space", ErrFormat, i, l)
		}
	}
	return pairs, nil
}

// splitMerge splits a merge "a b" at the first space after the first byte.
func splitMerge(l string) ([2]string, bool) {
	i := strings.IndexByte(l[min(1, len(l)):], ' ') + 1
	if i <= 0 || i == len(l)-1 {
		return [2]string{}, false
	}
	return [2]string{l[:i], l[i+1:]}, true
}

// configToken reads a token of tokenizer_config.json: a string, an object
// with "content", or null/absent ("").
func configToken(raw json.RawMessage, key string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("%w: tokenizer_config.json %s: want a string or {\"content\": ...}: %w", ErrFormat, key, err)
	}
	return obj.Content, nil
}

// buildAll builds the parts of a Sequence, leaving out null ones.
func buildAll[T any](parts []*hfComponent, build func(*hfComponent) (T, error)) ([]T, error) {
	out := make([]T, 0, len(parts))
	for _, p := range parts {
		if p == nil {
			continue
		}
		x, err := build(p)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func (c *hfComponent) pattern() (pattern, error) {
	switch {
	case c.Pattern == nil:
		return pattern{}, fmt.Errorf("%w: %s without a pattern", ErrFormat, c.Type)
	case c.Pattern.Regex != nil:
		return regexPattern(*c.Pattern.Regex)
	case c.Pattern.String != nil:
		return literalPattern(*c.Pattern.String)
	}
	return pattern{}, fmt.Errorf("%w: %s pattern is neither String nor Regex", ErrFormat, c.Type)
}

// normalizer returns the function a normalizer applies (nil for none).
func (c *hfComponent) normalizer() (func(string) string, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Prepend":
		prefix := c.Prepend
		return func(s string) string { return prefix + s }, nil
	case "Replace":
		p, err := c.pattern()
		if err != nil {
			return nil, err
		}
		return p.replacer(c.Content), nil
	case "Sequence":
		fs, err := buildAll(c.Normalizers, (*hfComponent).normalizer)
		if err != nil {
			return nil, err
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("%w: normalizer %q", ErrUnsupported, c.Type)
}

// replacer returns a function that replaces every match of p with content.
// A regular expression that fails to run leaves the text as it is.
func (p pattern) replacer(content string) func(string) string {
	if p.re == nil {
		return func(s string) string { return strings.ReplaceAll(s, p.literal, content) }
	}
	return func(s string) string {
		found, err := p.find(s)
		if err != nil || len(found) == 0 {
			return s
		}
		var b strings.Builder
		prev := 0
		for _, m := range found {
			b.WriteString(s[prev:m[0]])
			b.WriteString(content)
			prev = m[1]
		}
		b.WriteString(s[prev:])
		return b.String()
	}
}

// preTokenizer returns the pre-tokenizer (nil for none).
func (c *hfComponent) preTokenizer() (preTokenizer, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case "Split":
		p, err := c.pattern()
		if err != nil {
			return nil, err
		}
		b, ok := splitBehaviors[c.Behavior]
		if !ok {
			return nil, fmt.Errorf("%w: Split behavior %q", ErrUnsupported, c.Behavior)
		}
		return splitPre{pat: p, behavior: b, invert: c.Invert}, nil
	case "ByteLevel":
		return newByteLevelPre(c.AddPrefixSpace, c.UseRegex == nil || *c.UseRegex)
	case "Sequence":
		seq, err := buildAll(c.PreTokenizers, (*hfComponent).preTokenizer)
		return preSequence(seq), err
	}
	return nil, fmt.Errorf("%w: pre_tokenizer %q", ErrUnsupported, c.Type)
}

// decoder sets s.decode, s.decodeAdded and s.stripAfter from the decoder:
// each token's text is computed once, on its own, by the per-token steps
// (ByteLevel, Replace, ByteFallback); Fuse changes nothing token by token;
// Strip drops leading content at the start of the text, i.e. after BOS.
// Without a decoder a token's text is itself.
func (c *hfComponent) decoder(s *rankedSpec) error {
	var steps []func(string) string
	var addedSteps []func(string) string
	var walk func(c *hfComponent) error
	walk = func(c *hfComponent) error {
		switch c.Type {
		case "ByteLevel":
			steps = append(steps, func(tok string) string {
				if b, ok := fromByteLevel(tok); ok {
					return b
				}
				return tok
			})
		case "Replace":
			p, err := c.pattern()
			if err != nil {
				return err
			}
			steps = append(steps, p.replacer(c.Content))
			addedSteps = append(addedSteps, p.replacer(c.Content))
		case "ByteFallback":
			steps = append(steps, func(tok string) string {
				if b, ok := parseBytePiece(tok); ok {
					return string([]byte{b})
				}
				return tok
			})
		case "Fuse":
		case "Strip":
			if c.Content != " " || c.Stop != 0 {
				return fmt.Errorf("%w: Strip decoder of %q, %d from the end (want leading spaces only)", ErrUnsupported, c.Content, c.Stop)
			}
			s.stripAfter = c.Start
		case "Sequence":
			for _, sub := range c.Decoders {
				if err := walk(sub); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%w: decoder %q", ErrUnsupported, c.Type)
		}
		return nil
	}
	if c != nil {
		if err := walk(c); err != nil {
			return err
		}
	}
	chain := func(steps []func(string) string) func(string) string {
		return func(tok string) string {
			for _, f := range steps {
				tok = f(tok)
			}
			return tok
		}
	}
	s.decode, s.decodeAdded = chain(steps), chain(addedSteps)
	return nil
}

// template returns the special tokens the post-processor puts before and
// after a single text (by content).
func (c *hfComponent) template() (prefix, suffix []string, err error) {
	if c == nil {
		return nil, nil, nil
	}
	switch c.Type {
	case "ByteLevel":
		return nil, nil, nil
	case "TemplateProcessing":
		seen := false
		for _, item := range c.Single {
			switch {
			case item.Sequence != nil && item.Sequence.ID == "A":
				seen = true
			case item.SpecialToken != nil:
				sp, ok := c.SpecialTokens[item.SpecialToken.ID]
				if !ok {
					return nil, nil, fmt.Errorf("%w: template token %q is not among its special_tokens", ErrFormat, item.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, sp.Tokens...)
				} else {
					prefix = append(prefix, sp.Tokens...)
				}
			default:
				return nil, nil, fmt.Errorf("%w: template item of a single text is neither SpecialToken nor Sequence A", ErrFormat)
			}
		}
		return prefix, suffix, nil
	case "Sequence":
		for _, sub := range c.Processors {
			p, s, err := sub.template()
			if err != nil {
				return nil, nil, err
			}
			prefix, suffix = append(prefix, p...), append(suffix, s...)
		}
		return prefix, suffix, nil
	}
	return nil, nil, fmt.Errorf("%w: post_processor %q", ErrUnsupported, c.Type)
}
