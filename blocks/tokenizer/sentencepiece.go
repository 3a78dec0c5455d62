package tokenizer

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of sentencepiece_model.proto
// (https://github.com/google/sentencepiece/blob/master/src/sentencepiece_model.proto).
const (
	spModelPieces         protowire.Number = 1 // ModelProto.pieces (repeated SentencePiece)
	spModelTrainerSpec    protowire.Number = 2 // ModelProto.trainer_spec
	spModelNormalizerSpec protowire.Number = 3 // ModelProto.normalizer_spec

	spPiecePiece protowire.Number = 1 // SentencePiece.piece (string)
	spPieceScore protowire.Number = 2 // SentencePiece.score (float)
	spPieceType  protowire.Number = 3 // SentencePiece.type (enum, default NORMAL)

	spTrainerModelType    protowire.Number = 3  // TrainerSpec.model_type (default UNIGRAM)
	spTrainerVocabSize    protowire.Number = 4  // TrainerSpec.vocab_size
	spTrainerByteFallback protowire.Number = 35 // TrainerSpec.byte_fallback
	spTrainerUnkID        protowire.Number = 40 // TrainerSpec.unk_id (default 0)
	spTrainerBOSID        protowire.Number = 41 // TrainerSpec.bos_id (default 1)
	spTrainerEOSID        protowire.Number = 42 // TrainerSpec.eos_id (default 2)

	spNormName             protowire.Number = 1 // NormalizerSpec.name
	spNormCharsmap         protowire.Number = 2 // NormalizerSpec.precompiled_charsmap
	spNormAddDummyPrefix   protowire.Number = 3 // NormalizerSpec.add_dummy_prefix (default true)
	spNormRemoveExtraSpace protowire.Number = 4 // NormalizerSpec.remove_extra_whitespaces (default true)
	spNormEscapeSpace      protowire.Number = 5 // NormalizerSpec.escape_whitespaces (default true)

	spModelTypeUnigram = 1
	spModelTypeBPE     = 2
)

// LoadSentencePiece reads a SentencePiece tokenizer.model (a serialized
// ModelProto, decoded field by field with google.golang.org/protobuf's
// protowire against sentencepiece_model.proto). It needs
// trainer_spec.model_type BPE (Llama 1 and 2, Mistral, TinyLlama) and an
// identity normalizer (no precompiled_charsmap); other models give
// ErrUnsupported. Like llama2.c (and unlike SentencePiece, which cannot tell
// them from spaces) a literal U+2581 in the text is not a space: it is
// encoded as its bytes. BOS, EOS and unknown ids come from trainer_spec (defaults
// 1, 2, 0); add_dummy_prefix from normalizer_spec (default true;
// WithDummyPrefix overrides it). A malformed file gives ErrFormat naming the
// file and the field.
func LoadSentencePiece(path string, opts ...Option) (*BPE, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: read SentencePiece model: %w", err)
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	t, err := parseSentencePiece(data, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// spModel is what this package uses of a ModelProto.
type spModel struct {
	pieces       []string
	scores       []float32
	types        []int32
	modelType    int64
	unk, bos     int64
	eos          int64
	hasTrainer   bool
	hasNorm      bool
	normName     string
	charsmap     bool
	dummyPrefix  bool
	removeSpaces bool
}

func parseSentencePiece(data []byte, c config) (*BPE, error) {
	m := spModel{modelType: spModelTypeUnigram, unk: 0, bos: 1, eos: 2, dummyPrefix: true, removeSpaces: true}
	err := walkProto(data, "ModelProto", func(f protoField) error {
		switch f.num {
		case spModelPieces:
			b, err := f.message("ModelProto.pieces")
			if err != nil {
				return err
			}
			return m.addPiece(b)
		case spModelTrainerSpec:
			b, err := f.message("ModelProto.trainer_spec")
			if err != nil {
				return err
			}
			m.hasTrainer = true
			return walkProto(b, "TrainerSpec", m.trainerField)
		case spModelNormalizerSpec:
			b, err := f.message("ModelProto.normalizer_spec")
			if err != nil {
				return err
			}
			m.hasNorm = true
			return walkProto(b, "NormalizerSpec", m.normalizerField)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(m.pieces) == 0 {
		return nil, fmt.Errorf("%w: SentencePiece model has no pieces (ModelProto field 1)", ErrFormat)
	}
	if !m.hasTrainer || !m.hasNorm {
		return nil, fmt.Errorf("%w: SentencePiece model without trainer_spec (field 2) or normalizer_spec (field 3), want both (truncated file?)", ErrFormat)
	}
	if m.modelType != spModelTypeBPE {
		return nil, fmt.Errorf("%w: SentencePiece model_type %d, want BPE (2); unigram and other models are not supported", ErrUnsupported, m.modelType)
	}
	if m.charsmap || (m.normName != "" && m.normName != "identity") {
		return nil, fmt.Errorf("%w: SentencePiece normalizer %q with precompiled rules, want \"identity\" (as Llama's)", ErrUnsupported, m.normName)
	}
	n := int64(len(m.pieces))
	for _, id := range []struct {
		name string
		v    int64
	}{{"bos_id", m.bos}, {"eos_id", m.eos}} {
		if id.v < 0 || id.v >= n {
			return nil, fmt.Errorf("%w: SentencePiece trainer_spec.%s %d, want an id in [0, %d)", ErrFormat, id.name, id.v, n)
		}
	}
	if m.unk >= n {
		return nil, fmt.Errorf("%w: SentencePiece trainer_spec.unk_id %d, want an id in [0, %d)", ErrFormat, m.unk, n)
	}
	unk := int(m.unk)
	if unk < 0 {
		unk = -1
	}
	dummy := m.dummyPrefix
	if c.dummyPrefix != nil {
		dummy = *c.dummyPrefix
	}
	t, err := NewBPE(m.pieces, m.scores, m.types, int(m.bos), int(m.eos), unk, WithDummyPrefix(dummy))
	if err != nil {
		return nil, err
	}
	t.removeExtraSpaces = m.removeSpaces
	return t, nil
}

func (m *spModel) addPiece(b []byte) error {
	id := len(m.pieces)
	var (
		piece    string
		hasPiece bool
		score    float32
		typ      = TypeNormal
	)
	err := walkProto(b, fmt.Sprintf("SentencePiece %d", id), func(f protoField) error {
		var err error
		switch f.num {
		case spPiecePiece:
			var s []byte
			s, err = f.message(fmt.Sprintf("pieces[%d].piece", id))
			piece, hasPiece = string(s), true
		case spPieceScore:
			var u uint32
			u, err = f.fixed32(fmt.Sprintf("pieces[%d].score", id))
			score = math.Float32frombits(u)
		case spPieceType:
			var v uint64
			v, err = f.varint(fmt.Sprintf("pieces[%d].type", id))
			typ = int32(v)
		}
		return err
	})
	if err != nil {
		return err
	}
	if !hasPiece || piece == "" {
		return fmt.Errorf("%w: SentencePiece pieces[%d] has no piece text, want a non-empty string", ErrFormat, id)
	}
	if math.IsNaN(float64(score)) {
		return fmt.Errorf("%w: SentencePiece pieces[%d] %q has score NaN, want a number", ErrFormat, id, piece)
	}
	m.pieces = append(m.pieces, piece)
	m.scores = append(m.scores, score)
	m.types = append(m.types, typ)
	return nil
}

func (m *spModel) trainerField(f protoField) error {
	var (
		v   uint64
		err error
	)
	switch f.num {
	case spTrainerModelType:
		v, err = f.varint("trainer_spec.model_type")
		m.modelType = int64(int32(v))
	case spTrainerUnkID:
		v, err = f.varint("trainer_spec.unk_id")
		m.unk = int64(int32(v))
	case spTrainerBOSID:
		v, err = f.varint("trainer_spec.bos_id")
		m.bos = int64(int32(v))
	case spTrainerEOSID:
		v, err = f.varint("trainer_spec.eos_id")
		m.eos = int64(int32(v))
	}
	return err
}

func (m *spModel) normalizerField(f protoField) error {
	var (
		v   uint64
		b   []byte
		err error
	)
	switch f.num {
	case spNormName:
		b, err = f.message("normalizer_spec.name")
		m.normName = string(b)
	case spNormCharsmap:
		b, err = f.message("normalizer_spec.precompiled_charsmap")
		m.charsmap = len(b) > 0
	case spNormAddDummyPrefix:
		v, err = f.varint("normalizer_spec.add_dummy_prefix")
		m.dummyPrefix = v != 0
	case spNormRemoveExtraSpace:
		v, err = f.varint("normalizer_spec.remove_extra_whitespaces")
		m.removeSpaces = v != 0
	}
	return err
}

// protoField is one decoded field of a protobuf message.
type protoField struct {
	num protowire.Number
	typ protowire.Type
	raw []byte // BytesType payload
	u64 uint64 // VarintType or Fixed32Type value
}

func (f protoField) message(name string) ([]byte, error) {
	if f.typ != protowire.BytesType {
		return nil, fmt.Errorf("%w: SentencePiece %s has wire type %d, want length-delimited (2)", ErrFormat, name, f.typ)
	}
	return f.raw, nil
}

func (f protoField) varint(name string) (uint64, error) {
	if f.typ != protowire.VarintType {
		return 0, fmt.Errorf("%w: SentencePiece %s has wire type %d, want varint (0)", ErrFormat, name, f.typ)
	}
	return f.u64, nil
}

func (f protoField) fixed32(name string) (uint32, error) {
	if f.typ != protowire.Fixed32Type {
		return 0, fmt.Errorf("%w: SentencePiece %s has wire type %d, want fixed32 (5)", ErrFormat, name, f.typ)
	}
	return uint32(f.u64), nil
}

// walkProto calls fn for each field of the serialized message b, skipping
// the values of groups and fixed64 fields (which no field used here has).
func walkProto(b []byte, msg string, fn func(protoField) error) error {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return fmt.Errorf("%w: SentencePiece %s at byte %d: bad field tag: %w", ErrFormat, msg, off, protowire.ParseError(n))
		}
		off += n
		f := protoField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.u64, n = protowire.ConsumeVarint(b[off:])
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b[off:])
			f.u64 = uint64(u)
		case protowire.BytesType:
			f.raw, n = protowire.ConsumeBytes(b[off:])
		default:
			n = protowire.ConsumeFieldValue(num, typ, b[off:])
		}
		if n < 0 {
			return fmt.Errorf("%w: SentencePiece %s field %d at byte %d: %w", ErrFormat, msg, num, off, protowire.ParseError(n))
		}
		off += n
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// WriteSentencePieceModel writes a minimal valid SentencePiece
// tokenizer.model (ModelProto, protowire-encoded) for a BPE vocabulary, with
// Llama 2's settings: model_type BPE, byte_fallback (when byte pieces
// exist), an identity normalizer with add_dummy_prefix and without
// remove_extra_whitespaces. pieces may use real spaces or U+2581 (written as
// U+2581); types may be nil (inferred as in NewBPE, with BOS "<s>", EOS
// "</s>" and unknown "<unk>"). unk_id, bos_id and eos_id are the ids of the
// TypeUnknown piece and of the control pieces "<s>" and "</s>" (else 0, 1,
// 2). It returns ErrFormat for empty, duplicated or mismatched inputs.
func WriteSentencePieceModel(w io.Writer, pieces []string, scores []float32, types []int32) error {
	b, err := encodeSentencePiece(pieces, scores, types, true)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func encodeSentencePiece(pieces []string, scores []float32, types []int32, dummyPrefix bool) ([]byte, error) {
	n := len(pieces)
	switch {
	case n == 0:
		return nil, fmt.Errorf("%w: write SentencePiece model: no pieces", ErrFormat)
	case len(scores) != n:
		return nil, fmt.Errorf("%w: write SentencePiece model: %d scores for %d pieces", ErrFormat, len(scores), n)
	case types != nil && len(types) != n:
		return nil, fmt.Errorf("%w: write SentencePiece model: %d types for %d pieces", ErrFormat, len(types), n)
	}
	bos, eos, unk := indexOf(pieces, "<s>", 1), indexOf(pieces, "</s>", 2), indexOf(pieces, "<unk>", 0)
	if bos >= n || eos >= n {
		return nil, fmt.Errorf("%w: write SentencePiece model: %d pieces without <s> and </s>, want BOS and EOS pieces", ErrFormat, n)
	}
	seen := make(map[string]int, n)
	hasBytes := false
	var out []byte
	for id, p := range pieces {
		p = strings.ReplaceAll(p, " ", spaceMarker)
		if p == "" {
			return nil, fmt.Errorf("%w: write SentencePiece model: piece %d is empty, want text", ErrFormat, id)
		}
		if prev, dup := seen[p]; dup {
			return nil, fmt.Errorf("%w: write SentencePiece model: pieces %d and %d are both %q, want unique pieces", ErrFormat, prev, id, p)
		}
		seen[p] = id
		typ := inferType(p, id, bos, eos, unk)
		if types != nil {
			typ = types[id]
		}
		if typ < TypeNormal || typ > TypeByte {
			return nil, fmt.Errorf("%w: write SentencePiece model: piece %d has type %d, want 1..6", ErrFormat, id, typ)
		}
		switch typ {
		case TypeUnknown:
			unk = id
		case TypeByte:
			hasBytes = true
		}
		var sp []byte
		sp = protowire.AppendTag(sp, spPiecePiece, protowire.BytesType)
		sp = protowire.AppendString(sp, p)
		sp = protowire.AppendTag(sp, spPieceScore, protowire.Fixed32Type)
		sp = protowire.AppendFixed32(sp, math.Float32bits(scores[id]))
		if typ != TypeNormal {
			sp = protowire.AppendTag(sp, spPieceType, protowire.VarintType)
			sp = protowire.AppendVarint(sp, uint64(typ))
		}
		out = protowire.AppendTag(out, spModelPieces, protowire.BytesType)
		out = protowire.AppendBytes(out, sp)
	}
	var ts []byte
	for _, f := range []struct {
		num protowire.Number
		v   uint64
	}{
		{spTrainerModelType, spModelTypeBPE},
		{spTrainerVocabSize, uint64(n)},
		{spTrainerByteFallback, protowire.EncodeBool(hasBytes)},
		{spTrainerUnkID, uint64(unk)},
		{spTrainerBOSID, uint64(bos)},
		{spTrainerEOSID, uint64(eos)},
	} {
		ts = protowire.AppendTag(ts, f.num, protowire.VarintType)
		ts = protowire.AppendVarint(ts, f.v)
	}
	out = protowire.AppendTag(out, spModelTrainerSpec, protowire.BytesType)
	out = protowire.AppendBytes(out, ts)
	var ns []byte
	ns = protowire.AppendTag(ns, spNormName, protowire.BytesType)
	ns = protowire.AppendString(ns, "identity")
	for _, f := range []struct {
		num protowire.Number
		v   bool
	}{{spNormAddDummyPrefix, dummyPrefix}, {spNormRemoveExtraSpace, false}, {spNormEscapeSpace, true}} {
		ns = protowire.AppendTag(ns, f.num, protowire.VarintType)
		ns = protowire.AppendVarint(ns, protowire.EncodeBool(f.v))
	}
	out = protowire.AppendTag(out, spModelNormalizerSpec, protowire.BytesType)
	out = protowire.AppendBytes(out, ns)
	return out, nil
}

// indexOf returns the first id of piece, else def.
func indexOf(pieces []string, piece string, def int) int {
	for id, p := range pieces {
		if p == piece {
			return id
		}
	}
	return def
}
