package tokenizer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// spaceMarker is SentencePiece's stand-in for a space, U+2581 "▁". Pieces of
// tokenizer.model and GGUF files use it; llama2.c's tokenizer.bin stores real
// spaces. BPE keeps real spaces internally.
const spaceMarker = "\u2581"

// minMergeScore is llama2.c's initial best_score: a merge whose piece scores
// at or below it never happens.
const minMergeScore = -1e10

// BPE is a SentencePiece-style byte-pair-encoding tokenizer with byte
// fallback, as used by Llama 1 and 2, TinyLlama and llama2.c's models. It is
// immutable after construction and safe for concurrent use.
//
// Encode follows llama2.c's encode (run.c of
// https://github.com/karpathy/llama2.c, "utf8 support, add_dummy_prefix and
// byte_fallback" version): optional BOS; a dummy-prefix space before
// non-empty text; each UTF-8 character looked up as a piece, else its bytes
// as byte pieces <0xXX>; then repeatedly the adjacent pair whose
// concatenation is a piece with the highest score is merged (ties: the
// leftmost pair) until no pair merges. Unlike llama2.c, only normal and
// user-defined pieces take part in lookups and merges (as in SentencePiece);
// control, unknown, unused and byte pieces are never produced from text.
type BPE struct {
	pieces  []string  // piece text with real spaces, by id
	scores  []float32 // merge score, by id
	types   []int32   // Type*, by id
	decoded []string  // what Decode emits for the id (raw byte for byte pieces)
	ids     map[string]int
	byteIDs [256]int // id of <0xXX> for each byte, -1 when absent
	bos     int
	eos     int
	unk     int // -1 when the vocabulary has none
	// dummyPrefix is SentencePiece's normalizer_spec.add_dummy_prefix: a
	// space is put before non-empty text.
	dummyPrefix bool
	// removeExtraSpaces is SentencePiece's
	// normalizer_spec.remove_extra_whitespaces: leading and trailing spaces
	// are dropped and runs of spaces become one (off for Llama 2).
	removeExtraSpaces bool
	// eog are the ids that end a generation, ascending (EndOfGeneration).
	eog []int
	// special matches the control and user-defined pieces in text
	// (EncodeSpecial), built on first use.
	special     addedTokens
	specialOnce sync.Once
}

var _ Tokenizer = (*BPE)(nil)

// Option configures a loader or NewBPE.
type Option func(*config) error

type config struct {
	vocabSize   int   // 0: read to EOF (LoadLlama2C)
	dummyPrefix *bool // nil: the source's own setting
	eog         []int // further end-of-generation ids (GGUF eot/eom_token_id)
}

func newConfig(opts []Option) (config, error) {
	var c config // defaults: vocabulary size from the file, source's dummy prefix
	for _, o := range opts {
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	return c, nil
}

// WithVocabSize makes LoadLlama2C read exactly n entries (as llama2.c does
// with the checkpoint's vocab_size) and fail if the file holds fewer. Other
// loaders ignore it.
func WithVocabSize(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("%w: vocabulary size %d, want > 0", ErrFormat, n)
		}
		c.vocabSize = n
		return nil
	}
}

// WithDummyPrefix overrides whether a space is put before non-empty text
// (SentencePiece's add_dummy_prefix). Without it, NewBPE and LoadLlama2C use
// true (Llama 2), LoadSentencePiece the model's normalizer_spec and FromGGUF
// tokenizer.ggml.add_space_prefix (default true).
func WithDummyPrefix(on bool) Option {
	return func(c *config) error {
		c.dummyPrefix = &on
		return nil
	}
}

// NewBPE builds a tokenizer from a vocabulary: pieces[i] is the text of id i
// (with real spaces or U+2581 "▁" for space: both are accepted), scores[i]
// its merge score (higher merges first), types[i] its SentencePiece type
// (TypeNormal, TypeControl, TypeByte, ...). types may be nil: then unk is
// TypeUnknown, bos and eos are TypeControl, pieces spelled <0xXX> are
// TypeByte and all others TypeNormal. unk may be -1 (no unknown piece). It
// returns ErrFormat if the lengths differ, an id is out of range, or a byte
// piece is not spelled <0xXX>. Options: WithDummyPrefix (default true).
func NewBPE(pieces []string, scores []float32, types []int32, bos, eos, unk int, opts ...Option) (*BPE, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	n := len(pieces)
	if n == 0 {
		return nil, fmt.Errorf("%w: empty vocabulary", ErrFormat)
	}
	if len(scores) != n {
		return nil, fmt.Errorf("%w: %d scores for %d pieces", ErrFormat, len(scores), n)
	}
	if types != nil && len(types) != n {
		return nil, fmt.Errorf("%w: %d piece types for %d pieces", ErrFormat, len(types), n)
	}
	for _, s := range []struct {
		name string
		id   int
		min  int
	}{{"BOS", bos, 0}, {"EOS", eos, 0}, {"unknown", unk, -1}} {
		if s.id < s.min || s.id >= n {
			return nil, fmt.Errorf("%w: %s id %d outside the vocabulary [0, %d)", ErrFormat, s.name, s.id, n)
		}
	}
	t := &BPE{
		pieces:      make([]string, n),
		scores:      append([]float32(nil), scores...),
		types:       make([]int32, n),
		decoded:     make([]string, n),
		ids:         make(map[string]int, n),
		bos:         bos,
		eos:         eos,
		unk:         unk,
		dummyPrefix: c.dummyPrefix == nil || *c.dummyPrefix,
	}
	for i := range t.byteIDs {
		t.byteIDs[i] = -1
	}
	for id, p := range pieces {
		p = strings.ReplaceAll(p, spaceMarker, " ")
		t.pieces[id] = p
		typ := inferType(p, id, bos, eos, unk)
		if types != nil {
			typ = types[id]
		}
		t.types[id] = typ
		switch typ {
		case TypeNormal, TypeUserDefined:
			t.decoded[id] = p
			if _, dup := t.ids[p]; !dup && p != "" {
				t.ids[p] = id // the lowest id wins a duplicated piece
			}
		case TypeByte:
			b, ok := parseBytePiece(p)
			if !ok {
				return nil, fmt.Errorf("%w: piece %d is a byte piece spelled %q, want <0xXX>", ErrFormat, id, p)
			}
			t.decoded[id] = string([]byte{b})
			if t.byteIDs[b] < 0 {
				t.byteIDs[b] = id
			}
		case TypeUnknown, TypeUnused:
			t.decoded[id] = p // llama2.c prints the piece, e.g. "<unk>"
		case TypeControl:
			t.decoded[id] = "" // SentencePiece decodes control pieces to nothing
		default:
			return nil, fmt.Errorf("%w: piece %d %q has type %d, want 1..6", ErrFormat, id, p, typ)
		}
	}
	t.eog = append([]int{bos, eos}, c.eog...)
	for _, id := range c.eog {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("%w: end-of-generation id %d outside the vocabulary [0, %d)", ErrFormat, id, n)
		}
	}
	for id, p := range t.pieces {
		if t.types[id] == TypeControl && slices.Contains(endOfGenerationTokens, p) {
			t.eog = append(t.eog, id)
		}
	}
	t.eog = idSet(t.eog...)
	return t, nil
}

// withEndOfGeneration adds ids that end a generation (a GGUF's
// eot_token_id and eom_token_id).
func withEndOfGeneration(ids ...int) Option {
	return func(c *config) error {
		c.eog = append(c.eog, ids...)
		return nil
	}
}

// inferType guesses a piece's SentencePiece type for vocabularies that carry
// none (llama2.c tokenizer.bin).
func inferType(p string, id, bos, eos, unk int) int32 {
	switch {
	case id == unk:
		return TypeUnknown
	case id == bos || id == eos:
		return TypeControl
	}
	if _, ok := parseBytePiece(p); ok {
		return TypeByte
	}
	return TypeNormal
}

// parseBytePiece returns the byte of a piece spelled <0xXX> (hex, either case).
func parseBytePiece(p string) (byte, bool) {
	if len(p) != 6 || !strings.HasPrefix(p, "<0x") || p[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(p[3:5], 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

// BOS is the beginning-of-sequence id.
func (t *BPE) BOS() int { return t.bos }

// EOS is the end-of-sequence id.
func (t *BPE) EOS() int { return t.eos }

// Unknown is the id of the unknown piece, or -1 when there is none.
func (t *BPE) Unknown() int { return t.unk }

// VocabSize is the number of ids.
func (t *BPE) VocabSize() int { return len(t.pieces) }

// DummyPrefix reports whether a space is put before non-empty text.
func (t *BPE) DummyPrefix() bool { return t.dummyPrefix }

// Piece returns the text of id with real spaces (control pieces as stored,
// e.g. "<s>"), or "" when id is out of range.
func (t *BPE) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// ID returns the id of a normal piece given with real spaces.
func (t *BPE) ID(piece string) (int, bool) {
	id, ok := t.ids[piece]
	return id, ok
}

// Vocab returns copies of the pieces (real spaces), scores and types, by id:
// the inputs of NewBPE and WriteSentencePieceModel.
func (t *BPE) Vocab() (pieces []string, scores []float32, types []int32) {
	return append([]string(nil), t.pieces...), append([]float32(nil), t.scores...), append([]int32(nil), t.types...)
}

// Decode returns the bytes token contributes when it follows prev, by
// llama2.c's decode: a leading space is dropped after BOS; a byte piece
// <0xXX> is the raw byte XX (possibly part of a multi-byte character);
// control pieces give "". An id outside the vocabulary gives "".
func (t *BPE) Decode(prev, token int) string {
	if token < 0 || token >= len(t.decoded) {
		return ""
	}
	s := t.decoded[token]
	if prev == t.bos && t.types[token] != TypeByte && strings.HasPrefix(s, " ") {
		s = s[1:]
	}
	return s
}

// DecodeAll is DecodeAll(t, ids).
func (t *BPE) DecodeAll(ids []int) string { return DecodeAll(t, ids) }
