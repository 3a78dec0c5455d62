package wire_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// goldenFrames maps each file of testdata/golden to the frame it holds. The
// files were written by hand from the layout in the package doc.
var goldenFrames = map[string]wire.Frame{
	"open.hex": &wire.Open{SessionID: "s1", Model: "stories260K", Span: swarm.Span{Start: 0, End: 2},
		MaxLength: 256, DType: swarm.DTypeF16, AllocTimeout: 1.5},
	"granted.hex": &wire.Granted{SessionID: "s1", DType: swarm.DTypeF16, CacheBytes: 40960, Waited: 0.25},
	"waiting.hex": &wire.Waiting{SessionID: "s2", Position: 1, QueueLen: 3, EstimatedWait: 2},
	"step_f16.hex": &wire.Step{SessionID: "s1", Position: 7,
		Hidden: wire.Hidden{DType: swarm.DTypeF16, NTokens: 2, DModel: 2, Data: []float32{1, -2, 0.5, 65504}}},
	"step_f32.hex": &wire.Step{SessionID: "s1", Position: 0,
		Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: 2, Data: []float32{1, -0.5}}},
	"result_bf16.hex": &wire.Result{SessionID: "s1", Position: 7, Compute: 0.125,
		Hidden: wire.Hidden{DType: swarm.DTypeBF16, NTokens: 1, DModel: 3, Data: []float32{1, -2, 3.140625}}},
	"close.hex":  &wire.Close{SessionID: "s1"},
	"closed.hex": &wire.Closed{SessionID: "s1"},
	"error.hex":  &wire.Error{SessionID: "s3", Code: wire.CodeNoRoom, Message: "no room"},
}

// readHex reads an annotated hex file: '#' starts a comment, whitespace is
// ignored.
func readHex(t testing.TB, path string) []byte {
	t.Helper()
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	var digits strings.Builder
	for line := range strings.Lines(string(text)) {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	require.NoError(t, err, path)
	return b
}

func TestGoldenFrames(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.hex"))
	require.NoError(t, err)
	require.Len(t, files, len(goldenFrames), "every golden file has an expected frame and vice versa")
	seen := map[wire.Type]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			want, ok := goldenFrames[name]
			require.True(t, ok, "no expected frame for %s", name)
			golden := readHex(t, path)

			got, err := wire.Marshal(want)
			require.NoError(t, err)
			require.Equal(t, hex.EncodeToString(golden), hex.EncodeToString(got), "Marshal(%#v)", want)

			back, err := wire.Unmarshal(golden, 0)
			require.NoError(t, err)
			require.Equal(t, want, back)
			seen[want.Type()] = true
		})
	}
	for typ := wire.TypeOpen; typ <= wire.TypeError; typ++ {
		require.True(t, seen[typ], "no golden frame of type %s", typ)
	}
}

// roundTripFrames holds one or more frames of every type, with tensor values
// exactly representable in their dtype so that decoding gives them back.
func roundTripFrames() []wire.Frame {
	row := func(dt swarm.DType, n, d int) wire.Hidden {
		data := make([]float32, n*d)
		for i := range data {
			data[i] = float32(i%17-8) * 0.25 // multiples of 1/4 in [-2, 2]: exact in f16 and bf16
		}
		return wire.Hidden{DType: dt, NTokens: n, DModel: d, Data: data}
	}
	return []wire.Frame{
		&wire.Open{Model: "m", Span: swarm.Span{Start: 3, End: 5}, MaxLength: 1, DType: swarm.DTypeF32},
		&wire.Open{SessionID: "client-chosen-id", Model: "stories260K", Span: swarm.Span{Start: 0, End: 5},
			MaxLength: 512, DType: swarm.DTypeBF16, AllocTimeout: 30},
		&wire.Granted{SessionID: "x", DType: swarm.DTypeF32},
		&wire.Granted{SessionID: "server-assigned-7", DType: swarm.DTypeBF16, CacheBytes: math.MaxInt64, Waited: 12.5},
		&wire.Waiting{QueueLen: 1},
		&wire.Waiting{SessionID: "s", Position: 41, QueueLen: 42, EstimatedWait: 3.75},
		&wire.Step{SessionID: "s", Hidden: row(swarm.DTypeF32, 1, 1)},
		&wire.Step{SessionID: "s", Position: 199, Hidden: row(swarm.DTypeF16, 3, 64)},
		&wire.Step{SessionID: "s", Position: 1, Hidden: row(swarm.DTypeBF16, 128, 8)},
		&wire.Result{SessionID: "s", Position: 199, Compute: 0.003, Hidden: row(swarm.DTypeF16, 1, 64)},
		&wire.Result{SessionID: "s", Hidden: row(swarm.DTypeF32, 2, 5)},
		&wire.Close{SessionID: "s"},
		&wire.Closed{SessionID: "séance"},
		&wire.Error{Code: wire.CodeBadFrame, Message: ""},
		&wire.Error{SessionID: "s", Code: wire.CodeShuttingDown, Message: "server is stopping: try another"},
		&wire.Error{SessionID: "s", Code: wire.Code(999), Message: "a code from a newer peer"},
	}
}

func TestRoundTripMarshal(t *testing.T) {
	for _, f := range roundTripFrames() {
		t.Run(f.Type().String(), func(t *testing.T) {
			b, err := wire.Marshal(f)
			require.NoError(t, err)
			got, err := wire.Unmarshal(b, len(b))
			require.NoError(t, err)
			require.Equal(t, f, got)
		})
	}
}

// TestRoundTripStream writes every frame back to back into one stream and
// reads them back in order, ending with a clean io.EOF.
func TestRoundTripStream(t *testing.T) {
	var stream bytes.Buffer
	frames := roundTripFrames()
	for _, f := range frames {
		require.NoError(t, wire.Encode(&stream, f))
	}
	for i, want := range frames {
		got, err := wire.Decode(&stream, 1<<20)
		require.NoError(t, err, "frame %d", i)
		require.Equal(t, want, got, "frame %d", i)
	}
	_, err := wire.Decode(&stream, 1<<20)
	require.ErrorIs(t, err, io.EOF)
}

// oneWriteWriter records each Write call separately.
type oneWriteWriter struct {
	writes [][]byte
}

func (w *oneWriteWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestEncodeWritesOneFramePerCall(t *testing.T) {
	w := &oneWriteWriter{}
	frames := roundTripFrames()
	for _, f := range frames {
		require.NoError(t, wire.Encode(w, f))
	}
	require.Len(t, w.writes, len(frames))
	for i, msg := range w.writes {
		got, err := wire.Unmarshal(msg, 0)
		require.NoError(t, err)
		require.Equal(t, frames[i], got)
	}
}

func TestEncodeRejectsInvalidFrames(t *testing.T) {
	hidden := wire.Hidden{DType: swarm.DTypeF32, NTokens: 1, DModel: 2, Data: []float32{1, 2}}
	tests := []struct {
		name  string
		frame wire.Frame
		want  string
	}{
		{"nil", nil, "nil frame"},
		{"open without model", &wire.Open{Span: swarm.Span{End: 1}, MaxLength: 1, DType: swarm.DTypeF32}, "model is empty"},
		{"open empty span", &wire.Open{Model: "m", Span: swarm.Span{Start: 2, End: 2}, MaxLength: 1, DType: swarm.DTypeF32}, "span 2:2"},
		{"open zero max_length", &wire.Open{Model: "m", Span: swarm.Span{End: 1}, DType: swarm.DTypeF32}, "max_length 0"},
		{"open q8_0 dtype", &wire.Open{Model: "m", Span: swarm.Span{End: 1}, MaxLength: 1, DType: swarm.DTypeQ8_0}, "dtype q8_0 cannot carry hidden states"},
		{"open NaN timeout", &wire.Open{Model: "m", Span: swarm.Span{End: 1}, MaxLength: 1, DType: swarm.DTypeF32, AllocTimeout: math.NaN()}, "alloc_timeout = NaN"},
		{"open negative timeout", &wire.Open{Model: "m", Span: swarm.Span{End: 1}, MaxLength: 1, DType: swarm.DTypeF32, AllocTimeout: -1}, "alloc_timeout = -1"},
		{"open long id", &wire.Open{SessionID: strings.Repeat("x", 256), Model: "m", Span: swarm.Span{End: 1}, MaxLength: 1, DType: swarm.DTypeF32}, "session_id is 256 bytes"},
		{"granted without id", &wire.Granted{DType: swarm.DTypeF32}, "session_id is empty"},
		{"granted negative bytes", &wire.Granted{SessionID: "s", DType: swarm.DTypeF32, CacheBytes: -1}, "cache_bytes -1"},
		{"waiting position past queue", &wire.Waiting{Position: 2, QueueLen: 2}, "position 2 of queue_len 2"},
		{"step without id", &wire.Step{Hidden: hidden}, "session_id is empty"},
		{"step shape mismatch", &wire.Step{SessionID: "s", Hidden: wire.Hidden{DType: swarm.DTypeF32, NTokens: 2, DModel: 2, Data: []float32{1}}}, "shape [2, 2] has 4 elements but the data has 1"},
		{"step empty tensor", &wire.Step{SessionID: "s", Hidden: wire.Hidden{DType: swarm.DTypeF32}}, "shape [0, 0]"},
		{"step negative position", &wire.Step{SessionID: "s", Position: -1, Hidden: hidden}, "position -1"},
		{"result infinite compute", &wire.Result{SessionID: "s", Compute: math.Inf(1), Hidden: hidden}, "compute = +Inf"},
		{"close invalid utf8", &wire.Close{SessionID: "\xff"}, "not valid UTF-8"},
		{"error code 0", &wire.Error{Message: "x"}, "error code 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := wire.Encode(&buf, tt.frame)
			require.ErrorIs(t, err, wire.ErrBadFrame)
			require.ErrorContains(t, err, tt.want)
			require.Zero(t, buf.Len(), "nothing is written for an invalid frame")
		})
	}
}

func TestNewErrorAlwaysEncodes(t *testing.T) {
	long := strings.Repeat("é", 40000) // 80000 bytes of 2-byte runes
	for _, msg := range []string{"", "plain", "bad \xff\xfe bytes", long} {
		f := wire.NewError("s", wire.CodeInternal, errors.New(msg))
		require.LessOrEqual(t, len(f.Message), math.MaxUint16)
		b, err := wire.Marshal(f)
		require.NoError(t, err)
		got, err := wire.Unmarshal(b, 0)
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
	// A run of invalid bytes becomes one U+FFFD (strings.ToValidUTF8).
	require.Equal(t, "bad \uFFFD bytes", wire.NewError("", wire.CodeInternal, errors.New("bad \xff\xfe bytes")).Message)
	require.Equal(t, strings.Repeat("é", 32767), wire.NewError("", wire.CodeInternal, errors.New(long)).Message,
		"cut on a rune boundary below 65535 bytes")
}

func TestErrorFrameIsAnError(t *testing.T) {
	var err error = &wire.Error{SessionID: "s1", Code: wire.CodeTimeout, Message: "waited 5s"}
	wrapped := errors.Join(errors.New("client: open hop 2"), err)
	var got *wire.Error
	require.ErrorAs(t, wrapped, &got)
	require.Equal(t, wire.CodeTimeout, got.Code)
	require.Equal(t, `wire: remote error Timeout (session "s1"): waited 5s`, err.Error())
}

func TestCodeNames(t *testing.T) {
	tests := []struct {
		code wire.Code
		want string
	}{
		{wire.CodeBadFrame, "BadFrame"},
		{wire.CodeUnknownSession, "UnknownSession"},
		{wire.CodeNoRoom, "NoRoom"},
		{wire.CodeTimeout, "Timeout"},
		{wire.CodeBadSpan, "BadSpan"},
		{wire.CodeWrongModel, "WrongModel"},
		{wire.CodeUnsupportedVersion, "UnsupportedVersion"},
		{wire.CodeInternal, "Internal"},
		{wire.CodeShuttingDown, "ShuttingDown"},
		{wire.CodeBadPosition, "BadPosition"},
		{wire.CodeBadDType, "BadDType"},
		{wire.CodeBadShape, "BadShape"},
		{wire.CodeBadValue, "BadValue"},
		{wire.Code(1000), "Code(1000)"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.code.String())
		require.Equal(t, tt.want != "Code(1000)", tt.code.Known(), tt.want)
	}
	// The numbers are part of the protocol.
	require.Equal(t, wire.Code(3), wire.CodeNoRoom)
	require.Equal(t, wire.Code(9), wire.CodeShuttingDown)
}
