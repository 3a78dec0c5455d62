package tokenizer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	gguf "github.com/gpustack/gguf-parser-go"
)

// GGUF metadata keys of the embedded tokenizer
// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, "Tokenizer").
const (
	ggufModel       = "tokenizer.ggml.model"
	ggufTokens      = "tokenizer.ggml.tokens"
	ggufScores      = "tokenizer.ggml.scores"
	ggufTokenType   = "tokenizer.ggml.token_type"
	ggufBOS         = "tokenizer.ggml.bos_token_id"
	ggufEOS         = "tokenizer.ggml.eos_token_id"
	ggufUnknown     = "tokenizer.ggml.unknown_token_id"
	ggufSpacePrefix = "tokenizer.ggml.add_space_prefix"
)

// FromGGUF reads the tokenizer embedded in a GGUF file's metadata (parsed
// with github.com/gpustack/gguf-parser-go through a memory map; tensor data
// is not read); see FromGGUFFile.
func FromGGUF(path string, opts ...Option) (t Tokenizer, err error) {
	if _, err := newConfig(opts); err != nil {
		return nil, err
	}
	defer func() {
		// gguf-parser-go panics on some malformed inputs; nothing may panic here.
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("%w: %s: GGUF parser failed: %v", ErrFormat, path, r)
		}
	}()
	f, err := gguf.ParseGGUFFile(path, gguf.UseMMap()) // unbuffered reads take seconds over 100k-token vocabularies
	if err != nil {
		return nil, fmt.Errorf("%w: %s: parse GGUF: %w", ErrFormat, path, err)
	}
	return FromGGUFFile(f, path, opts...)
}

// FromGGUFFile reads the tokenizer of a GGUF file already parsed with
// gguf-parser-go (blocks.Open parses a model's GGUF header once and hands
// it here); path names the file in errors and is read again only for
// strings the parser trimmed. By tokenizer.ggml.model:
//
//   - "llama": a *BPE (SentencePiece BPE with byte fallback) from tokens
//     (strings with U+2581 for space), scores (float32, default 0),
//     token_type (int32, default inferred as in NewBPE), bos/eos/unknown
//     ids (default 1, 2, 0, llama.cpp's SentencePiece defaults) and
//     add_space_prefix (default true; WithDummyPrefix overrides it);
//   - "gpt2": a *RankedBPE (byte-level BPE), see rankedFromGGUF;
//   - anything else: ErrUnsupported.
//
// A missing or mistyped key, or a malformed file, gives ErrFormat naming
// the file and the key.
func FromGGUFFile(f *gguf.GGUFFile, path string, opts ...Option) (t Tokenizer, err error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("%w: %s: GGUF metadata: %v", ErrFormat, path, r)
		}
	}()
	kvs := f.Header.MetadataKV
	model, err := ggufString(kvs, ggufModel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch model {
	case "llama":
		b, err := sentencePieceFromGGUF(f, path, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return b, nil
	case "gpt2":
		r, err := rankedFromGGUF(f, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: %s: %s is %q, want \"llama\" (SentencePiece BPE) or \"gpt2\" (byte-level BPE)", ErrUnsupported, path, ggufModel, model)
}

// ggufStringList returns the required string array under key verbatim.
func ggufStringList(f *gguf.GGUFFile, path, key string) ([]string, error) {
	kvs := f.Header.MetadataKV
	trimmed, err := ggufArray(kvs, key, gguf.GGUFMetadataValueTypeString, true, (gguf.GGUFMetadataKVArrayValue).ValuesString)
	if err != nil {
		return nil, err
	}
	kv, _ := kvs.Get(key)
	return readGGUFStrings(path, key, f.Header, kv.ValueArray(), trimmed)
}

// sentencePieceFromGGUF reads a tokenizer.ggml.model "llama" tokenizer.
func sentencePieceFromGGUF(f *gguf.GGUFFile, path string, c config) (*BPE, error) {
	kvs := f.Header.MetadataKV
	pieces, err := ggufStringList(f, path, ggufTokens)
	if err != nil {
		return nil, err
	}
	scores, err := ggufArray(kvs, ggufScores, gguf.GGUFMetadataValueTypeFloat32, false, (gguf.GGUFMetadataKVArrayValue).ValuesFloat32)
	if err != nil {
		return nil, err
	}
	if scores == nil {
		scores = make([]float32, len(pieces))
	}
	types, err := ggufArray(kvs, ggufTokenType, gguf.GGUFMetadataValueTypeInt32, false, (gguf.GGUFMetadataKVArrayValue).ValuesInt32)
	if err != nil {
		return nil, err
	}
	var ids [3]int
	for i, k := range []struct {
		key string
		def int
	}{{ggufBOS, 1}, {ggufEOS, 2}, {ggufUnknown, 0}} {
		if ids[i], err = ggufInt(kvs, k.key, k.def); err != nil {
			return nil, err
		}
	}
	if c.dummyPrefix == nil {
		on, err := ggufBool(kvs, ggufSpacePrefix, true)
		if err != nil {
			return nil, err
		}
		c.dummyPrefix = &on
	}
	var eog []int
	for _, key := range []string{ggufEOT, ggufEOM} {
		id, err := ggufInt(kvs, key, -1)
		if err != nil {
			return nil, err
		}
		if id >= 0 {
			eog = append(eog, id)
		}
	}
	return NewBPE(pieces, scores, types, ids[0], ids[1], ids[2], WithDummyPrefix(*c.dummyPrefix), withEndOfGeneration(eog...))
}

func ggufString(kvs gguf.GGUFMetadataKVs, key string) (string, error) {
	kv, ok := kvs.Get(key)
	if !ok {
		return "", fmt.Errorf("%w: no metadata key %s", ErrFormat, key)
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeString {
		return "", fmt.Errorf("%w: metadata %s has type %v, want string", ErrFormat, key, kv.ValueType)
	}
	return kv.ValueString(), nil
}

func ggufBool(kvs gguf.GGUFMetadataKVs, key string, def bool) (bool, error) {
	kv, ok := kvs.Get(key)
	if !ok {
		return def, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeBool {
		return false, fmt.Errorf("%w: metadata %s has type %v, want bool", ErrFormat, key, kv.ValueType)
	}
	return kv.ValueBool(), nil
}

func ggufInt(kvs gguf.GGUFMetadataKVs, key string, def int) (int, error) {
	kv, ok := kvs.Get(key)
	if !ok {
		return def, nil
	}
	if !kv.ValueType.IsNumeric() {
		return 0, fmt.Errorf("%w: metadata %s has type %v, want an integer", ErrFormat, key, kv.ValueType)
	}
	v := gguf.ValueNumeric[int64](kv)
	if v < 0 || v > 1<<31 {
		return 0, fmt.Errorf("%w: metadata %s is %d, want a token id", ErrFormat, key, v)
	}
	return int(v), nil
}

// ggufArray returns the elements of an array key of element type typ, or nil
// when the key is absent and not required.
func ggufArray[T any](kvs gguf.GGUFMetadataKVs, key string, typ gguf.GGUFMetadataValueType, required bool,
	values func(gguf.GGUFMetadataKVArrayValue) []T) ([]T, error) {
	kv, ok := kvs.Get(key)
	if !ok {
		if required {
			return nil, fmt.Errorf("%w: no metadata key %s", ErrFormat, key)
		}
		return nil, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeArray {
		return nil, fmt.Errorf("%w: metadata %s has type %v, want array of %v", ErrFormat, key, kv.ValueType, typ)
	}
	av := kv.ValueArray()
	if av.Type != typ {
		return nil, fmt.Errorf("%w: metadata %s is an array of %v, want %v", ErrFormat, key, av.Type, typ)
	}
	if uint64(len(av.Array)) != av.Len {
		return nil, fmt.Errorf("%w: metadata %s holds %d of its %d elements", ErrFormat, key, len(av.Array), av.Len)
	}
	return values(av), nil
}

// readGGUFStrings re-reads the items of the string array under key from
// the file.
// gguf-parser-go v0.28.1 applies bytes.TrimSpace to every string it reads
// (_GGUFReader.ReadString), which turns pieces such as U+00A0 or "\t" into
// "" or shortens them; a tokenizer needs them verbatim. The items follow the
// array's type (uint32) and length (uint64; uint32 in GGUF v1) at the
// offset the parser reports, each a length then that many bytes
// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, gguf_string_t).
// Each string read must trim to the parser's value.
func readGGUFStrings(path, key string, h gguf.GGUFHeader, av gguf.GGUFMetadataKVArrayValue, trimmed []string) ([]string, error) {
	var (
		order   binary.ByteOrder = binary.LittleEndian
		lenSize int64            = 8
	)
	if h.Magic == gguf.GGUFMagicGGUFBe {
		order = binary.BigEndian
	}
	if h.Version <= gguf.GGUFVersionV1 {
		lenSize = 4
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: reopen GGUF: %w", err)
	}
	defer f.Close()
	start := av.StartOffset + 4 + lenSize
	if av.Size < 0 || av.Size > 1<<32 {
		return nil, fmt.Errorf("%w: %s occupies %d bytes, want 0..4 GiB", ErrFormat, key, av.Size)
	}
	raw := make([]byte, av.Size)
	if _, err := f.ReadAt(raw, start); err != nil {
		return nil, fmt.Errorf("%w: %s: read %d bytes at offset %d: %w", ErrFormat, key, av.Size, start, err)
	}
	out := make([]string, 0, len(trimmed))
	for i := range trimmed {
		if int64(len(raw)) < lenSize {
			return nil, fmt.Errorf("%w: %s item %d: truncated length", ErrFormat, key, i)
		}
		var n uint64
		if lenSize == 8 {
			n = order.Uint64(raw)
		} else {
			n = uint64(order.Uint32(raw))
		}
		raw = raw[lenSize:]
		if n > uint64(len(raw)) {
			return nil, fmt.Errorf("%w: %s item %d: length %d, only %d bytes left in the array", ErrFormat, key, i, n, len(raw))
		}
		s := string(raw[:n])
		raw = raw[n:]
		if string(bytes.TrimSpace([]byte(s))) != trimmed[i] {
			return nil, fmt.Errorf("%w: %s item %d: read %q at the parser's offset, parser gave %q", ErrFormat, key, i, s, trimmed[i])
		}
		out = append(out, s)
	}
	if len(raw) != 0 {
		return nil, fmt.Errorf("%w: %s: %d bytes left after %d items", ErrFormat, key, len(raw), len(trimmed))
	}
	return out, nil
}
