package swarm

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadDType is returned (wrapped) for an unknown or unsupported dtype name.
var ErrBadDType = errors.New("swarm: bad dtype")

// DType is the element type of a tensor, for stored weights and for hidden
// states on the wire.
type DType uint8

// The dtypes the project knows. The zero value is invalid on purpose so that
// a forgotten field is caught by Validate-style checks.
const (
	DTypeInvalid DType = iota
	// DTypeF32 is IEEE 754 binary32, 4 bytes per element.
	DTypeF32
	// DTypeF16 is IEEE 754 binary16, 2 bytes per element.
	DTypeF16
	// DTypeBF16 is bfloat16 (the top 16 bits of binary32), 2 bytes per element.
	DTypeBF16
	// DTypeQ8_0 is GGML's Q8_0: blocks of 32 int8 values with one f16 scale,
	// 34 bytes per 32 elements (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
	DTypeQ8_0
)

var dtypeNames = map[DType]string{
	DTypeF32:  "f32",
	DTypeF16:  "f16",
	DTypeBF16: "bf16",
	DTypeQ8_0: "q8_0",
}

// String returns the lower-case name used on the command line and in JSON
// ("f32", "f16", "bf16", "q8_0").
func (d DType) String() string {
	if n, ok := dtypeNames[d]; ok {
		return n
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ParseDType parses a dtype name, case-insensitively ("f16", "F16", "float16",
// "fp16" are all DTypeF16).
func ParseDType(name string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "f32", "fp32", "float32", "float":
		return DTypeF32, nil
	case "f16", "fp16", "float16", "half":
		return DTypeF16, nil
	case "bf16", "bfloat16":
		return DTypeBF16, nil
	case "q8_0", "q8":
		return DTypeQ8_0, nil
	}
	return DTypeInvalid, fmt.Errorf("%w: %q (want f32, f16, bf16 or q8_0)", ErrBadDType, name)
}

// Bytes returns the storage size in bytes of n elements of this dtype; for
// block-quantized types n must be a multiple of the block size (32 for Q8_0),
// otherwise the result is rounded up to whole blocks. It returns 0 for an
// invalid dtype.
func (d DType) Bytes(n int64) int64 {
	switch d {
	case DTypeF32:
		return 4 * n
	case DTypeF16, DTypeBF16:
		return 2 * n
	case DTypeQ8_0:
		return (n + 31) / 32 * 34
	}
	return 0
}

// MarshalText implements encoding.TextMarshaler.
func (d DType) MarshalText() ([]byte, error) {
	if _, ok := dtypeNames[d]; !ok {
		return nil, fmt.Errorf("%w: %d", ErrBadDType, uint8(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *DType) UnmarshalText(b []byte) error {
	v, err := ParseDType(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
