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

	// GGML's other block-quantized weight types, with the block layouts of
	// llama.cpp's ggml-common.h (block_q4_0 ... block_iq4_xs). Blocks hold
	// 32 elements (the _0/_1 and IQ4_NL types) or a 256-element super-block
	// (the K-quants and IQ4_XS); a row is a whole number of blocks.

	// DTypeQ4_0 is 32 4-bit values and an f16 scale d: x = d*(q-8), 18 bytes.
	DTypeQ4_0
	// DTypeQ4_1 is 32 4-bit values, f16 scale d and min m: x = d*q + m, 20 bytes.
	DTypeQ4_1
	// DTypeQ5_0 is 32 5-bit values (4 low bits packed, fifth bits in a
	// uint32) and an f16 scale: x = d*(q-16), 22 bytes.
	DTypeQ5_0
	// DTypeQ5_1 is Q5_0 with an f16 min instead of the offset 16, 24 bytes.
	DTypeQ5_1
	// DTypeQ2_K is a 256-element super-block of 2-bit values in 16 groups
	// of 16 with 4-bit scales and mins, f16 d and dmin, 84 bytes.
	DTypeQ2_K
	// DTypeQ3_K is a 256-element super-block of 3-bit values in 16 groups
	// of 16 with 6-bit scales and an f16 d, 110 bytes.
	DTypeQ3_K
	// DTypeQ4_K is a 256-element super-block of 4-bit values in 8 groups of
	// 32 with 6-bit scales and mins, f16 d and dmin, 144 bytes.
	DTypeQ4_K
	// DTypeQ5_K is Q4_K with a fifth bit per value, 176 bytes.
	DTypeQ5_K
	// DTypeQ6_K is a 256-element super-block of 6-bit values in 16 groups
	// of 16 with int8 scales and an f16 d, 210 bytes.
	DTypeQ6_K
	// DTypeIQ4_NL is 32 4-bit indices into a fixed non-linear table of 16
	// int8 levels and an f16 scale, 18 bytes.
	DTypeIQ4_NL
	// DTypeIQ4_XS is a 256-element super-block of IQ4_NL indices in 8
	// groups of 32 with 6-bit scales and an f16 d, 136 bytes.
	DTypeIQ4_XS
)

// dtypeLayout is a dtype's name and block: size elements in bytes bytes.
type dtypeLayout struct {
	name        string
	size, bytes int
}

var dtypeLayouts = map[DType]dtypeLayout{
	DTypeF32:    {"f32", 1, 4},
	DTypeF16:    {"f16", 1, 2},
	DTypeBF16:   {"bf16", 1, 2},
	DTypeQ8_0:   {"q8_0", 32, 34},
	DTypeQ4_0:   {"q4_0", 32, 18},
	DTypeQ4_1:   {"q4_1", 32, 20},
	DTypeQ5_0:   {"q5_0", 32, 22},
	DTypeQ5_1:   {"q5_1", 32, 24},
	DTypeQ2_K:   {"q2_k", 256, 84},
	DTypeQ3_K:   {"q3_k", 256, 110},
	DTypeQ4_K:   {"q4_k", 256, 144},
	DTypeQ5_K:   {"q5_k", 256, 176},
	DTypeQ6_K:   {"q6_k", 256, 210},
	DTypeIQ4_NL: {"iq4_nl", 32, 18},
	DTypeIQ4_XS: {"iq4_xs", 256, 136},
}

// String returns the lower-case name used on the command line and in JSON
// ("f32", "f16", "bf16", "q8_0", "q4_k", ...).
func (d DType) String() string {
	if l, ok := dtypeLayouts[d]; ok {
		return l.name
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// dtypeNames lists the valid names for error messages.
func dtypeNames() string {
	names := make([]string, 0, len(dtypeLayouts))
	for d := DTypeF32; ; d++ {
		l, ok := dtypeLayouts[d]
		if !ok {
			break
		}
		names = append(names, l.name)
	}
	return strings.Join(names, ", ")
}

// ParseDType parses a dtype name, case-insensitively ("f16", "F16", "float16",
// "fp16" are all DTypeF16; "Q4_K" is DTypeQ4_K).
func ParseDType(name string) (DType, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "fp32", "float32", "float":
		return DTypeF32, nil
	case "fp16", "float16", "half":
		return DTypeF16, nil
	case "bfloat16":
		return DTypeBF16, nil
	case "q8":
		return DTypeQ8_0, nil
	}
	for d, l := range dtypeLayouts {
		if l.name == n {
			return d, nil
		}
	}
	return DTypeInvalid, fmt.Errorf("%w: %q (want one of %s)", ErrBadDType, name, dtypeNames())
}

// BlockSize is the number of elements of one storage block: 1 for f32, f16
// and bf16, 32 or 256 for the quantized types, 0 for an invalid dtype.
func (d DType) BlockSize() int { return dtypeLayouts[d].size }

// Quantized reports whether d stores blocks of several elements with shared
// scales (Q8_0 and the other GGML quantized types).
func (d DType) Quantized() bool { return dtypeLayouts[d].size > 1 }

// Bytes returns the storage size in bytes of n elements of this dtype,
// exact when n is a multiple of BlockSize (CheckRow); otherwise it is
// rounded up to whole blocks. It returns 0 for an invalid dtype.
func (d DType) Bytes(n int64) int64 {
	l, ok := dtypeLayouts[d]
	if !ok {
		return 0
	}
	return (n + int64(l.size) - 1) / int64(l.size) * int64(l.bytes)
}

// CheckRow returns an error wrapping ErrBadDType unless a row (a tensor's
// innermost dimension) of n elements is a whole number of d's blocks: a
// q4_k row must hold a multiple of 256 values, a q4_0 row of 32.
func (d DType) CheckRow(n int64) error {
	l, ok := dtypeLayouts[d]
	switch {
	case !ok:
		return fmt.Errorf("%w: %v", ErrBadDType, d)
	case n%int64(l.size) != 0:
		return fmt.Errorf("%w: a %s row of %d elements, want a multiple of its block size %d", ErrBadDType, l.name, n, l.size)
	}
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d DType) MarshalText() ([]byte, error) {
	if _, ok := dtypeLayouts[d]; !ok {
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
