package synth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Format is a file format WriteFormats writes, by its `swarm model synth
// --formats` name.
type Format string

// The formats WriteFormats writes.
const (
	// FormatHF is a Hugging Face directory (WriteHF).
	FormatHF Format = "hf"
	// FormatGGUF is a GGUF v3 file, tokenizer embedded (WriteGGUF).
	FormatGGUF Format = "gguf"
	// FormatLlama2C is a llama2.c checkpoint of version 0 with its
	// tokenizer.bin (WriteLlama2C, WriteLlama2CTokenizer).
	FormatLlama2C Format = "llama2c"
)

// ParseFormats returns the formats named (case and surrounding spaces
// ignored), in order. The error names the first unknown one.
func ParseFormats(names []string) ([]Format, error) {
	out := make([]Format, 0, len(names))
	for _, name := range names {
		f := Format(strings.ToLower(strings.TrimSpace(name)))
		switch f {
		case FormatHF, FormatGGUF, FormatLlama2C:
			out = append(out, f)
		default:
			return nil, fmt.Errorf("unknown format %q (want hf, gguf or llama2c)", name)
		}
	}
	return out, nil
}

// WriteFormats writes the model of c into dir, created if missing, once
// per format: dir itself as a Hugging Face directory, dir/NAME.gguf, and
// dir/NAME.bin with dir/tokenizer.bin, NAME being c.Name. It returns the
// path written for each format, in order. Errors are the writers' (c's
// validation errors wrap ErrConfig) and the file system's.
func WriteFormats(dir string, c Config, formats []Format) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range formats {
		var err error
		switch f {
		case FormatHF:
			err = WriteHF(dir, c)
			written = append(written, dir)
		case FormatGGUF:
			p := filepath.Join(dir, c.Name+".gguf")
			err = WriteGGUF(p, c)
			written = append(written, p)
		case FormatLlama2C:
			p := filepath.Join(dir, c.Name+".bin")
			if c.Tokenizer != "" {
				err = fmt.Errorf("%w: llama2c's tokenizer.bin cannot hold the tokenizer %s (write hf or gguf)", ErrConfig, c.Tokenizer)
			} else if err = WriteLlama2C(p, c, 0); err == nil {
				err = WriteLlama2CTokenizer(filepath.Join(dir, "tokenizer.bin"), c)
			}
			written = append(written, p)
		default:
			err = fmt.Errorf("%w: unknown format %q (want hf, gguf or llama2c)", ErrConfig, f)
		}
		if err != nil {
			return nil, err
		}
	}
	return written, nil
}
