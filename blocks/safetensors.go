package blocks

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/swarmllm/swarm/swarm"
)

// safetensors (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON mapping tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// first byte after the header) plus an optional "__metadata__" object of
// strings, then the tensor data.

// safetensorsMaxHeader bounds the JSON header (the reference implementation
// refuses headers over 100 MB).
const safetensorsMaxHeader = 100 << 20

// stTensor is one entry of a safetensors header.
type stTensor struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// stDTypes maps the safetensors dtypes the engine computes with.
var stDTypes = map[string]swarm.DType{"F32": swarm.DTypeF32, "F16": swarm.DTypeF16, "BF16": swarm.DTypeBF16}

// parseSafetensorsHeader decodes the JSON header b of a file whose tensor
// data holds dataSize bytes, checking that every tensor's byte range lies
// inside the data and matches its shape for the dtypes it knows. It never
// panics on bad input.
func parseSafetensorsHeader(b []byte, dataSize int64) (map[string]stTensor, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("header is not a JSON object: %w", err)
	}
	out := make(map[string]stTensor, len(raw))
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic errors
	for _, name := range names {
		if name == "__metadata__" {
			continue
		}
		var t stTensor
		if err := json.Unmarshal(raw[name], &t); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		if len(t.DataOffsets) != 2 || t.DataOffsets[0] < 0 || t.DataOffsets[1] < t.DataOffsets[0] || t.DataOffsets[1] > dataSize {
			return nil, fmt.Errorf("tensor %s: data_offsets %v, want [begin, end] with 0 <= begin <= end <= %d (the data size; truncated file?)",
				name, t.DataOffsets, dataSize)
		}
		if dt, ok := stDTypes[t.DType]; ok {
			n := int64(1)
			for _, d := range t.Shape {
				if d < 0 || (d > 0 && n > (1<<62)/d) {
					return nil, fmt.Errorf("tensor %s: shape %v is invalid", name, t.Shape)
				}
				n *= d
			}
			if want := dt.Bytes(n); want != t.DataOffsets[1]-t.DataOffsets[0] {
				return nil, fmt.Errorf("tensor %s: %s %v needs %d bytes, data_offsets give %d",
					name, t.DType, t.Shape, want, t.DataOffsets[1]-t.DataOffsets[0])
			}
		}
		out[name] = t
	}
	return out, nil
}

// safetensorsFile is one parsed safetensors file.
type safetensorsFile struct {
	file      *modelFile
	dataStart int64
	tensors   map[string]stTensor
}

// readSafetensors reads and checks the header of an open safetensors file.
func readSafetensors(f *modelFile) (*safetensorsFile, error) {
	var lenBuf [8]byte
	if f.size < 8 {
		return nil, fmt.Errorf("%w: %s: %d bytes, want at least the 8-byte header length", ErrFormat, f.path, f.size)
	}
	if _, err := f.f.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("%w: %s: reading the header length: %w", ErrFormat, f.path, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > safetensorsMaxHeader || int64(n) > f.size-8 {
		return nil, fmt.Errorf("%w: %s: header length %d, want at most %d and at most the file size %d - 8",
			ErrFormat, f.path, n, safetensorsMaxHeader, f.size)
	}
	hdr := make([]byte, n)
	if _, err := f.f.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("%w: %s: reading the %d-byte header: %w", ErrFormat, f.path, n, err)
	}
	dataStart := 8 + int64(n)
	ts, err := parseSafetensorsHeader(hdr, f.size-dataStart)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFormat, f.path, err)
	}
	return &safetensorsFile{file: f, dataStart: dataStart, tensors: ts}, nil
}

// ref locates tensor name as a [rows, cols] matrix (cols only for a 1-D
// tensor, rows = 1).
func (s *safetensorsFile) ref(name string) (tensorRef, error) {
	t := s.tensors[name]
	dt, ok := stDTypes[t.DType]
	if !ok {
		return tensorRef{}, fmt.Errorf("%w: %s: tensor %s has dtype %s, want F32, F16 or BF16", ErrFormat, s.file.path, name, t.DType)
	}
	r := tensorRef{name: name, file: s.file, offset: s.dataStart + t.DataOffsets[0], dtype: dt}
	switch len(t.Shape) {
	case 1:
		r.rows, r.cols = 1, int(t.Shape[0])
	case 2:
		r.rows, r.cols = int(t.Shape[0]), int(t.Shape[1])
	default:
		return tensorRef{}, fmt.Errorf("%w: %s: tensor %s has shape %v, want 1 or 2 dims", ErrFormat, s.file.path, name, t.Shape)
	}
	return r, nil
}
