package blocks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/swarm"
)

// File is what Open reads model files through; *os.File satisfies it. A
// caller can substitute its own (WithOpenFile), for instance to count the
// bytes a load reads.
type File interface {
	io.ReaderAt
	io.Closer
	Stat() (fs.FileInfo, error)
}

// Option configures Open.
type Option func(*config) error

type config struct {
	tokenizerPath string
	name          string
	openFile      func(path string) (File, error)
}

// WithTokenizer names the tokenizer file to use instead of the one the model
// format implies (llama2.c checkpoints carry none: run.c's default is
// tokenizer.bin beside the model). Any file tokenizer.Load accepts works.
func WithTokenizer(path string) Option {
	return func(c *config) error {
		if path == "" {
			return fmt.Errorf("%w: empty tokenizer path", ErrArgument)
		}
		c.tokenizerPath = path
		return nil
	}
}

// WithName sets ModelInfo.Name instead of the name derived from the file.
func WithName(name string) Option {
	return func(c *config) error {
		if name == "" {
			return fmt.Errorf("%w: empty model name", ErrArgument)
		}
		c.name = name
		return nil
	}
}

// WithOpenFile replaces os.Open for the files whose tensors are read (the
// GGUF header itself is parsed by gguf-parser-go from the path).
func WithOpenFile(open func(path string) (File, error)) Option {
	return func(c *config) error {
		if open == nil {
			return fmt.Errorf("%w: nil open function", ErrArgument)
		}
		c.openFile = open
		return nil
	}
}

// tensorRef locates one tensor in a model file without reading it.
type tensorRef struct {
	name   string // as the file names it, for error messages
	file   *modelFile
	offset int64 // absolute byte offset of the first element
	dtype  swarm.DType
	rows   int // 1 for a vector
	cols   int
	// permuteHeads > 0 marks a q/k weight, bias or norm in rotate-half RoPE
	// order with that many heads, to be permuted into adjacent-pair order
	// on load (rows of a matrix, elements of a vector).
	permuteHeads int
	// plusOne marks a Gemma RMSNorm weight stored as w for a (1 + w)
	// scale: 1 is added (in float32) on load.
	plusOne bool
}

func (t tensorRef) bytes() int64 { return t.dtype.Bytes(int64(t.rows) * int64(t.cols)) }

// modelFile is one open file of a model.
type modelFile struct {
	path string
	f    File
	size int64
	// mapped is the file's read-only mapping once an engine asked for it
	// (Model.fileMapping), nil before; mapFailed records that the file
	// cannot be mapped. Both are guarded by Model.mu.
	mapped    *mapping
	mapFailed bool
}

// Model is an opened model file (or Hugging Face directory): its metadata
// and the location of every tensor, none of them read yet. LoadSpan and
// LoadHead read only the tensors they need. A Model is safe for concurrent
// use; engines and heads it returns stay valid after Close.
type Model struct {
	path   string
	format string // "gguf", "llama2c" or "hf"
	info   swarm.ModelInfo
	arch   *archDesc  // the architecture table entry
	params archParams // the architecture's per-model numbers

	embed      tensorRef             // [Vocab, DModel]
	outputNorm tensorRef             // [DModel]
	output     *tensorRef            // [Vocab, DModel]; nil when tied to embed
	layers     [][NumSlots]tensorRef // absent slots have file == nil
	ropeFreqs  *tensorRef            // GGUF rope_freqs [HeadDim/2], or nil

	tokenizerPath string                                                    // "" when none is known
	loadTok       func(path string, vocab int) (tokenizer.Tokenizer, error) // loads tokenizerPath
	chatTemplate  func() (string, error)                                    // nil: none

	mu     sync.Mutex // guards files and closed
	files  []*modelFile
	closed bool
}

// Open opens a model and reads its metadata, detecting the format from the
// path: a directory is a Hugging Face model (config.json + safetensors), a
// file starting with "GGUF" is GGUF v3, a .bin file is a llama2.c checkpoint.
// It checks every tensor's shape and that its bytes lie inside the file, so
// truncated files fail here. Errors wrap ErrFormat and name the file, the
// tensor and what was expected.
func Open(path string, opts ...Option) (*Model, error) {
	cfg := config{openFile: func(p string) (File, error) { return os.Open(p) }}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("blocks: open model: %w", err)
	}
	m := &Model{path: path}
	switch {
	case st.IsDir():
		err = openHF(m, &cfg, path)
	case isGGUF(path) || filepath.Ext(path) == ".gguf":
		err = openGGUF(m, &cfg, path)
	case filepath.Ext(path) == ".bin":
		err = openLlama2C(m, &cfg, path)
	case filepath.Base(path) == "config.json" || filepath.Ext(path) == ".safetensors":
		err = openHF(m, &cfg, filepath.Dir(path))
	default:
		err = fmt.Errorf("%w: %s: unknown model format (want a GGUF file, a llama2.c .bin checkpoint or a Hugging Face directory)", ErrFormat, path)
	}
	if err == nil {
		err = m.finish(&cfg)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// finish applies options and checks the tensor directory against the info.
func (m *Model) finish(cfg *config) error {
	if cfg.name != "" {
		m.info.Name = cfg.name
	}
	if cfg.tokenizerPath != "" {
		m.tokenizerPath = cfg.tokenizerPath
		m.loadTok = loadTokenizerFile
	}
	info := &m.info
	if m.params.attnScale == 0 {
		m.params.attnScale = math.Sqrt(float64(info.HeadDim))
	}
	if err := info.Validate(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrFormat, m.path, err)
	}
	if err := validRopeScaling(info.RopeScaling); err != nil {
		return fmt.Errorf("%s: %w", m.path, err)
	}
	if len(m.layers) != info.NBlocks {
		return fmt.Errorf("%w: %s: %d blocks of tensors, want n_blocks = %d", ErrFormat, m.path, len(m.layers), info.NBlocks)
	}
	d := info.DModel
	check := func(t tensorRef, rows, cols int) error {
		if t.rows != rows || t.cols != cols {
			return fmt.Errorf("%w: %s: tensor %s has shape [%d %d], want [%d %d] (rows, columns)",
				ErrFormat, t.file.path, t.name, t.rows, t.cols, rows, cols)
		}
		if err := t.dtype.CheckRow(int64(t.cols)); err != nil {
			return fmt.Errorf("%w: %s: tensor %s of shape [%d %d] (rows, columns): %w", ErrFormat, t.file.path, t.name, t.rows, t.cols, err)
		}
		if end := t.offset + t.bytes(); t.offset < 0 || end > t.file.size {
			return fmt.Errorf("%w: %s: tensor %s needs bytes %d..%d but the file has %d bytes (truncated?)",
				ErrFormat, t.file.path, t.name, t.offset, end, t.file.size)
		}
		return nil
	}
	if m.arch.ffn != ffnDense {
		return fmt.Errorf("%w: %s: architecture %s has a mixture-of-experts feed-forward, which the engine does not compute yet", ErrFormat, m.path, m.arch.name)
	}
	var blockBytes int64
	for b, ts := range m.layers {
		for _, tn := range m.arch.tensors {
			if ts[tn.slot].file == nil {
				return fmt.Errorf("%w: %s: block %d lacks tensor %s of architecture %s", ErrFormat, m.path, b, tn.gguf, m.arch.name)
			}
		}
		var n int64
		for slot, t := range ts {
			if t.file == nil {
				continue
			}
			rows, cols := slotShape(Slot(slot), info)
			if err := check(t, rows, cols); err != nil {
				return err
			}
			n += t.bytes()
		}
		if b == 0 {
			info.DType = ts[SlotWQ].dtype
		}
		blockBytes = max(blockBytes, n)
	}
	info.BlockBytes = blockBytes
	// The CPU backend's float32 K and V; an engine's Info() carries its own
	// backend's (Backend.CacheDType).
	info.CacheBytesPerToken = CacheBytesPerToken(*info, swarm.DTypeF32)
	for _, c := range []struct {
		t          *tensorRef
		rows, cols int
	}{{&m.embed, info.Vocab, d}, {&m.outputNorm, 1, d}, {m.output, info.Vocab, d}, {m.ropeFreqs, 1, info.HeadDim / 2}} {
		if c.t == nil {
			continue
		}
		if err := check(*c.t, c.rows, c.cols); err != nil {
			return err
		}
	}
	return nil
}

// open opens one file of the model and remembers it for Close.
func (m *Model) open(cfg *config, path string) (*modelFile, error) {
	f, err := cfg.openFile(path)
	if err != nil {
		return nil, fmt.Errorf("blocks: open model file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("blocks: stat model file: %w", err)
	}
	mf := &modelFile{path: path, f: f, size: st.Size()}
	m.mu.Lock()
	m.files = append(m.files, mf)
	m.mu.Unlock()
	return mf, nil
}

// Info describes the model: shapes, dtype, s_m (BlockBytes) and cache bytes
// per token.
func (m *Model) Info() swarm.ModelInfo { return m.info }

// Format is "gguf", "llama2c" or "hf".
func (m *Model) Format() string { return m.format }

// TokenizerPath is the tokenizer file LoadHead will load, "" if none.
func (m *Model) TokenizerPath() string { return m.tokenizerPath }

// Close closes the model's files. Engines and heads already loaded keep
// working (an engine's memory-mapped weights stay mapped until the engine
// closes); LoadSpan and LoadHead return ErrClosed.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, f := range m.files {
		errs = append(errs, f.f.Close())
		if f.mapped != nil {
			// The Model's reference: engines with matrices in the
			// mapping keep it until they close.
			errs = append(errs, f.mapped.release())
		}
	}
	m.files = nil
	m.closed = true
	return errors.Join(errs...)
}

// LoadSpan reads the weights of the blocks in span (and nothing else) and
// returns a CPU engine for them: LoadSpanWith(CPU(), span).
func (m *Model) LoadSpan(span swarm.Span) (Engine, error) {
	return m.LoadSpanWith(CPU(), span)
}

// LoadSpanWith builds backend b's engine for the blocks in span, reading
// their weights (and nothing else) through SpanTensors. It returns an error
// wrapping swarm.ErrBadSpan for a span outside [0, NBlocks), ErrFormat for
// unreadable tensors and ErrClosed after Close.
func (m *Model) LoadSpanWith(b Backend, span swarm.Span) (Engine, error) {
	t, err := m.SpanTensors(span)
	if err != nil {
		return nil, err
	}
	return b.NewEngine(t)
}

// SpanTensors returns the tensor directory of span for a Backend. It reads
// the RoPE frequency factors (a small vector) and nothing else; errors wrap
// swarm.ErrBadSpan, ErrFormat or ErrClosed.
func (m *Model) SpanTensors(span swarm.Span) (SpanTensors, error) {
	if err := span.Validate(m.info.NBlocks); err != nil {
		return nil, fmt.Errorf("blocks: load span of %s: %w", m.path, err)
	}
	st := &spanTensors{m: m, span: span, config: BlockConfig{
		AttnScale: m.params.attnScale, SlidingTheta: m.params.slidingTheta, Activation: m.params.act,
	}}
	if m.ropeFreqs != nil {
		v, err := m.readVector(*m.ropeFreqs)
		if err != nil {
			return nil, err
		}
		st.config.RopeFactors = v
	}
	return st, nil
}

// spanTensors is a Model's SpanTensors for one span.
type spanTensors struct {
	m      *Model
	span   swarm.Span
	config BlockConfig
}

func (t *spanTensors) Info() swarm.ModelInfo { return t.m.info }
func (t *spanTensors) Config() BlockConfig   { return t.config }
func (t *spanTensors) Span() swarm.Span      { return t.span }

func (t *spanTensors) ref(b int, slot Slot) (tensorRef, bool) {
	if !t.span.Contains(b) || slot < 0 || slot >= NumSlots {
		return tensorRef{}, false
	}
	r := t.m.layers[b][slot]
	return r, r.file != nil
}

func (t *spanTensors) Tensor(b int, slot Slot) (TensorInfo, bool) {
	r, ok := t.ref(b, slot)
	if !ok {
		return TensorInfo{}, false
	}
	return TensorInfo{Name: r.name, DType: r.dtype, Rows: r.rows, Cols: r.cols}, true
}

func (t *spanTensors) ReadRows(b int, slot Slot, fn func(row0 int, raw []byte) error) error {
	r, ok := t.ref(b, slot)
	if !ok {
		return fmt.Errorf("%w: block %d has no tensor in slot %d (span %s)", ErrArgument, b, slot, t.span)
	}
	return t.m.readRows(r, fn)
}

func (t *spanTensors) Vector(b int, slot Slot) ([]float32, error) {
	r, ok := t.ref(b, slot)
	if !ok {
		return nil, fmt.Errorf("%w: block %d has no tensor in slot %d (span %s)", ErrArgument, b, slot, t.span)
	}
	return t.m.readVector(r)
}

// readChunk is the most bytes read from a file at once when loading.
const readChunk = 1 << 20

// readRows streams t's stored rows in chunks of at most readChunk bytes,
// q/k rows permuted into adjacent-pair RoPE order as t says (each such row
// read from its source position). See SpanTensors.ReadRows.
func (m *Model) readRows(t tensorRef, fn func(row0 int, raw []byte) error) error {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return fmt.Errorf("%w: model %s", ErrClosed, m.path)
	}
	rb := int(t.dtype.Bytes(int64(t.cols)))
	if rb <= 0 {
		return fmt.Errorf("%w: %s: tensor %s: %d columns of %v", ErrFormat, t.file.path, t.name, t.cols, t.dtype)
	}
	var perm []int
	if t.permuteHeads > 0 {
		perm = hfPermutation(t.permuteHeads, t.rows/t.permuteHeads)
	}
	read := func(dst []byte, row int) error {
		off := t.offset + int64(row)*int64(rb)
		if _, err := t.file.f.ReadAt(dst, off); err != nil {
			return fmt.Errorf("%w: %s: tensor %s: reading %d bytes at offset %d: %w", ErrFormat, t.file.path, t.name, len(dst), off, err)
		}
		return nil
	}
	rowsPerChunk := max(1, readChunk/rb)
	buf := make([]byte, min(rowsPerChunk, t.rows)*rb)
	for r := 0; r < t.rows; r += rowsPerChunk {
		n := min(rowsPerChunk, t.rows-r)
		chunk := buf[:n*rb]
		if perm == nil {
			if err := read(chunk, r); err != nil {
				return err
			}
		} else {
			for i := range n {
				if err := read(chunk[i*rb:(i+1)*rb], perm[r+i]); err != nil {
					return err
				}
			}
		}
		if err := fn(r, chunk); err != nil {
			return err
		}
	}
	return nil
}

// readMatrix reads one tensor into memory in its stored dtype.
func (m *Model) readMatrix(t tensorRef) (*matrix, error) {
	mat, err := newMatrix(t.rows, t.cols, t.dtype)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %s: %w", t.file.path, t.name, err)
	}
	err = m.readRows(t, func(r0 int, raw []byte) error {
		mat.setRaw(r0, raw)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return mat, nil
}

// readVector reads a tensor and widens it to float32 (norm weights,
// biases), permuting rotate-half elements and adding Gemma's 1 as t says.
func (m *Model) readVector(t tensorRef) ([]float32, error) {
	mat, err := m.readMatrix(tensorRef{name: t.name, file: t.file, offset: t.offset, dtype: t.dtype, rows: 1, cols: t.rows * t.cols})
	if err != nil {
		return nil, err
	}
	v := make([]float32, mat.cols)
	mat.rowF32(0, v)
	if t.permuteHeads > 0 {
		perm := hfPermutation(t.permuteHeads, len(v)/t.permuteHeads)
		src := append([]float32(nil), v...)
		for i, p := range perm {
			v[i] = src[p]
		}
	}
	if t.plusOne {
		for i := range v {
			v[i]++
		}
	}
	return v, nil
}

// LoadHead reads the client side of the model: token embeddings, final norm,
// LM head (unless tied to the embeddings) and the tokenizer, if one is known
// (Tokenizer() is nil otherwise). It never reads block weights. Like a
// span's (see mmap.go), the embedding and LM-head matrices stay in the
// file's read-only shared mapping where the kernels can read them in
// place, so loading copies nothing and processes of the same file share the
// pages; the head keeps the mapping after Close of the Model and lets go of
// it when it is garbage collected.
func (m *Model) LoadHead() (Head, error) {
	h := &cpuHead{info: m.info, params: m.params}
	var releases []func()
	ok := false
	defer func() {
		if ok {
			return
		}
		for _, r := range releases {
			r()
		}
	}()
	var err error
	if h.embed, err = m.loadMatrix(m.embed, &releases); err != nil {
		return nil, err
	}
	if h.norm, err = m.readVector(m.outputNorm); err != nil {
		return nil, err
	}
	h.output = h.embed
	if m.output != nil {
		if h.output, err = m.loadMatrix(*m.output, &releases); err != nil {
			return nil, err
		}
	}
	if m.tokenizerPath != "" {
		tok, err := m.loadTok(m.tokenizerPath, m.info.Vocab)
		if err != nil {
			return nil, fmt.Errorf("blocks: tokenizer of %s: %w", m.path, err)
		}
		if tok.VocabSize() > m.info.Vocab {
			return nil, fmt.Errorf("%w: tokenizer %s has %d tokens but the model's vocab is only %d",
				ErrFormat, m.tokenizerPath, tok.VocabSize(), m.info.Vocab)
		}
		h.tok = tok
	}
	ok = true
	h.mapped = len(releases)
	if len(releases) > 0 {
		// Head has no Close: the mapping is released once nothing can
		// reach h (and so its matrices) any more.
		runtime.AddCleanup(h, func(rs []func()) {
			for _, r := range rs {
				r()
			}
		}, releases)
	}
	return h, nil
}
