package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// rawFrame assembles a frame by hand: header fields as given, then payload.
func rawFrame(version uint16, typ, flags byte, payload []byte) []byte {
	b := []byte("SWRM")
	b = binary.LittleEndian.AppendUint16(b, version)
	b = append(b, typ, flags)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// cat concatenates byte pieces.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func TestDecodeRejectsMalformedFrames(t *testing.T) {
	sid := []byte{2, 0, 's', '1'}
	tensorHead := func(dtype byte, n, d uint32) []byte { return cat([]byte{dtype}, u32(n), u32(d)) }
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"short header", []byte("SWRM\x01\x00\x06"), "shorter than the 12-byte header"},
		{"bad magic", cat([]byte("SWRX"), rawFrame(1, 6, 0, sid)[4:]), `want "SWRM"`},
		{"type 0", rawFrame(1, 0, 0, sid), "unknown frame type 0"},
		{"type 9", rawFrame(1, 9, 0, sid), "unknown frame type 9"},
		{"reserved flags", rawFrame(1, 6, 0x80, sid), "flags 0x80"},
		{"truncated string", rawFrame(1, 6, 0, []byte{5, 0, 's'}), "payload ends inside session_id (needs 5 bytes, 1 left)"},
		{"truncated length", rawFrame(1, 6, 0, []byte{5}), "payload ends inside session_id length"},
		{"trailing bytes", rawFrame(1, 6, 0, cat(sid, []byte{0})), "1 bytes left over"},
		{"empty session id", rawFrame(1, 6, 0, []byte{0, 0}), "session_id is empty"},
		{"invalid utf8", rawFrame(1, 7, 0, []byte{1, 0, 0xff}), "not valid UTF-8"},
		{"open NaN timeout", rawFrame(1, 1, 0, cat([]byte{0, 0, 1, 0, 'm'}, u32(0), u32(1), u32(8), []byte{1},
			[]byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f})), "alloc_timeout = NaN"},
		{"open empty span", rawFrame(1, 1, 0, cat([]byte{0, 0, 1, 0, 'm'}, u32(3), u32(3), u32(8), []byte{1},
			make([]byte, 8))), "span 3:3"},
		{"open q8_0", rawFrame(1, 1, 0, cat([]byte{0, 0, 1, 0, 'm'}, u32(0), u32(1), u32(8), []byte{4},
			make([]byte, 8))), "dtype q8_0 cannot carry hidden states"},
		{"granted cache_bytes above int64", rawFrame(1, 2, 0, cat(sid, []byte{1},
			[]byte{0, 0, 0, 0, 0, 0, 0, 0x80}, make([]byte, 8))), "cache_bytes 9223372036854775808"},
		{"waiting position past queue", rawFrame(1, 3, 0, cat(sid, u32(3), u32(3), make([]byte, 8))), "position 3 of queue_len 3"},
		{"step dtype 0", rawFrame(1, 4, 0, cat(sid, u32(0), tensorHead(0, 1, 1), make([]byte, 4))), "dtype dtype(0) cannot carry"},
		{"step short data", rawFrame(1, 4, 0, cat(sid, u32(0), tensorHead(2, 2, 3), make([]byte, 11))),
			"hidden states [2, 3] f16: payload ends inside hidden data (needs 12 bytes, 11 left)"},
		{"step huge shape", rawFrame(1, 4, 0, cat(sid, u32(0), tensorHead(1, 0xffffffff, 0xffffffff), make([]byte, 4))),
			"hidden states [4294967295, 4294967295] f32: payload ends inside hidden data"},
		{"step zero tokens", rawFrame(1, 4, 0, cat(sid, u32(0), tensorHead(1, 0, 4))), "shape [0, 4]"},
		{"result negative compute", rawFrame(1, 5, 0, cat(sid, u32(0), []byte{0, 0, 0, 0, 0, 0, 0xf0, 0xbf},
			tensorHead(1, 1, 1), make([]byte, 4))), "compute = -1"},
		{"error code 0", rawFrame(1, 8, 0, cat(sid, []byte{0, 0}, []byte{0, 0})), "error code 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.Unmarshal(tt.frame, 0)
			require.ErrorIs(t, err, wire.ErrBadFrame)
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, wire.CodeBadFrame, wire.CodeOf(err))

			_, err = wire.Decode(bytes.NewReader(tt.frame), 0)
			require.ErrorIs(t, err, wire.ErrBadFrame, "Decode agrees with Unmarshal")
		})
	}
}

func TestDecodeUnknownVersion(t *testing.T) {
	for _, version := range []uint16{0, 2, 0xffff} {
		frame := rawFrame(version, 6, 0, []byte{2, 0, 's', '1'})
		for name, decode := range map[string]func() (wire.Frame, error){
			"Unmarshal": func() (wire.Frame, error) { return wire.Unmarshal(frame, 0) },
			"Decode":    func() (wire.Frame, error) { return wire.Decode(bytes.NewReader(frame), 0) },
		} {
			_, err := decode()
			require.ErrorIs(t, err, wire.ErrVersion, name)
			require.NotErrorIs(t, err, wire.ErrBadFrame, name)
			var ve *wire.VersionError
			require.ErrorAs(t, err, &ve, name)
			require.Equal(t, wire.VersionError{Got: version, Want: 1}, *ve)
			require.Equal(t, wire.CodeUnsupportedVersion, wire.CodeOf(err))
			require.ErrorContains(t, err, "this peer speaks version 1")
		}
	}
}

// headerOnlyReader yields one header and then fails the test if the decoder
// asks for the payload.
type headerOnlyReader struct {
	t      *testing.T
	header []byte
}

func (r *headerOnlyReader) Read(p []byte) (int, error) {
	if len(r.header) == 0 {
		r.t.Errorf("decoder read past the header of an oversized frame")
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, r.header)
	r.header = r.header[n:]
	return n, nil
}

func TestDecodeRejectsOversizedBeforeAllocating(t *testing.T) {
	header := rawFrame(1, 4, 0, nil)
	binary.LittleEndian.PutUint32(header[8:], 0xffffffff) // a 4 GiB payload

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := wire.Decode(&headerOnlyReader{t: t, header: header}, 1<<20)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, wire.ErrTooLarge)
	require.ErrorIs(t, err, wire.ErrBadFrame)
	require.ErrorContains(t, err, "payload of 4294967295 bytes exceeds the limit of 1048576")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "bytes allocated while rejecting")

	_, err = wire.Unmarshal(header, 1<<20)
	require.ErrorIs(t, err, wire.ErrTooLarge)

	// The limit is inclusive, and the default applies to maxPayload <= 0.
	frame := readHex(t, filepath.Join("testdata", "golden", "step_f16.hex"))
	_, err = wire.Unmarshal(frame, len(frame)-wire.HeaderLen)
	require.NoError(t, err)
	_, err = wire.Unmarshal(frame, len(frame)-wire.HeaderLen-1)
	require.ErrorIs(t, err, wire.ErrTooLarge)
	binary.LittleEndian.PutUint32(header[8:], wire.DefaultMaxPayload+1)
	_, err = wire.Unmarshal(header, -1)
	require.ErrorIs(t, err, wire.ErrTooLarge)
}

func TestDecodeTruncatedStream(t *testing.T) {
	frame := readHex(t, filepath.Join("testdata", "golden", "open.hex"))
	for _, n := range []int{1, wire.HeaderLen - 1, wire.HeaderLen, len(frame) - 1} {
		_, err := wire.Decode(bytes.NewReader(frame[:n]), 0)
		require.ErrorIs(t, err, wire.ErrBadFrame, "cut at %d", n)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d", n)
	}
	_, err := wire.Unmarshal(frame[:len(frame)-1], 0)
	require.ErrorContains(t, err, "header says 38 payload bytes, message has 37")
	_, err = wire.Unmarshal(append(frame, 0), 0)
	require.ErrorContains(t, err, "header says 38 payload bytes, message has 39")
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestDecodePassesReaderErrorsThrough(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := wire.Decode(failingReader{boom}, 0)
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, wire.ErrBadFrame, "an I/O failure is not a malformed frame")
	require.Equal(t, wire.CodeInternal, wire.CodeOf(err))
}

func TestMaxStepPayloadIsTight(t *testing.T) {
	const n, d = 3, 64
	id := string(bytes.Repeat([]byte("i"), wire.MaxNameLen))
	result := &wire.Result{SessionID: id, Compute: 1, Hidden: wire.Hidden{
		DType: swarm.DTypeF32, NTokens: n, DModel: d, Data: make([]float32, n*d)}}
	b, err := wire.Marshal(result)
	require.NoError(t, err)
	require.Len(t, b, wire.HeaderLen+wire.MaxStepPayload(n, d), "the largest frame of that shape")
	_, err = wire.Unmarshal(b, wire.MaxStepPayload(n, d))
	require.NoError(t, err)
	_, err = wire.Unmarshal(b, wire.MaxStepPayload(n, d)-1)
	require.ErrorIs(t, err, wire.ErrTooLarge)
}
