package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// JSON in and out of chat templates, as transformers' apply_chat_template
// sees it: request JSON (tools, tool-call arguments) becomes template
// values with objects in document order, and the tojson filter writes
// values back as transformers' tojson does (json.dumps with
// ensure_ascii=False: ", " and ": " separators, keys in insertion order).

// decodeJSON returns the template value of a JSON text: objects as
// *exec.Dict in document order (a Go map would iterate sorted), arrays as
// []any, integers (literals without a fraction or exponent that fit an
// int) as int, other numbers as float64, null as nil.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := exec.NewDict()
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(key.(string)), Value: exec.AsValue(v)})
			}
			_, err := dec.Token() // '}'
			return d, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token() // ']'
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		if !strings.ContainsAny(string(t), ".eE") {
			if i, err := strconv.ParseInt(string(t), 10, 0); err == nil {
				return int(i), nil
			}
		}
		return t.Float64()
	default: // string, bool, nil
		return t, nil
	}
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False), its arguments positional
// in that order or by keyword. With an indent the item separator is ","
// (json.dumps' rule), else ", ".
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	o := jsonOptions{indent: -1, itemSep: ", ", keySep: ": "}
	a, err := optionalArgs("tojson", params, "ensure_ascii", "indent", "separators", "sort_keys")
	if err != nil {
		return exec.AsValue(err)
	}
	ensureASCII, indent, separators, sortKeys := a[0], a[1], a[2], a[3]
	o.ensureASCII = ensureASCII != nil && ensureASCII.IsTrue()
	o.sortKeys = sortKeys != nil && sortKeys.IsTrue()
	if indent != nil && !indent.IsNil() {
		if !indent.IsInteger() {
			return exec.AsValue(fmt.Errorf("tojson: indent %s, want an integer", indent.String()))
		}
		o.indent, o.itemSep = max(indent.Integer(), 0), ","
	}
	if separators != nil && !separators.IsNil() {
		if !separators.IsList() || separators.Len() != 2 {
			return exec.AsValue(fmt.Errorf("tojson: separators %s, want (item_separator, key_separator)", separators.String()))
		}
		o.itemSep, o.keySep = separators.Index(0).String(), separators.Index(1).String()
	}
	s, err := toJSON(in, o)
	if err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(s)
}

// jsonOptions are the arguments of transformers' tojson filter.
type jsonOptions struct {
	indent      int // -1: none
	ensureASCII bool
	sortKeys    bool
	itemSep     string
	keySep      string
}

// toJSON writes a template value as json.dumps does with the options.
// Keys must be strings; Infinity and NaN are written as Python does.
func toJSON(v *exec.Value, o jsonOptions) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v *exec.Value, o jsonOptions, depth int) error {
	switch {
	case v.IsError():
		return errors.New(v.Error())
	case v.IsNil():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.Bool()))
	case v.IsInteger():
		b.WriteString(strconv.Itoa(v.Integer()))
	case v.IsFloat():
		b.WriteString(pyFloat(v.Float()))
	case v.IsString():
		writeJSONString(b, v.String(), o.ensureASCII)
	case v.IsList():
		var items []*exec.Value
		v.Iterate(func(_, _ int, item, _ *exec.Value) bool {
			items = append(items, item)
			return true
		}, func() {})
		b.WriteByte('[')
		for i, item := range items {
			writeSeparator(b, o, depth+1, i)
			if err := writeJSON(b, item, o, depth+1); err != nil {
				return err
			}
		}
		writeClose(b, o, depth, len(items), ']')
	case v.IsDict():
		keys := v.Keys()
		if o.sortKeys {
			slices.SortFunc(keys, func(a, b *exec.Value) int { return strings.Compare(a.String(), b.String()) })
		}
		b.WriteByte('{')
		for i, k := range keys {
			if !k.IsString() {
				return fmt.Errorf("tojson: key %s is not a string", k.String())
			}
			item, _ := v.GetItem(k.String())
			writeSeparator(b, o, depth+1, i)
			writeJSONString(b, k.String(), o.ensureASCII)
			b.WriteString(o.keySep)
			if err := writeJSON(b, item, o, depth+1); err != nil {
				return err
			}
		}
		writeClose(b, o, depth, len(keys), '}')
	default:
		return fmt.Errorf("tojson: %s is not JSON serializable", v.String())
	}
	return nil
}

// writeSeparator starts item i of a list or object at depth.
func writeSeparator(b *strings.Builder, o jsonOptions, depth, i int) {
	if i > 0 {
		b.WriteString(o.itemSep)
	}
	if o.indent >= 0 {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", o.indent*depth))
	}
}

// writeClose ends a list or object of n items at depth.
func writeClose(b *strings.Builder, o jsonOptions, depth, n int, c byte) {
	if o.indent >= 0 && n > 0 {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", o.indent*depth))
	}
	b.WriteByte(c)
}

// writeJSONString quotes s as Python's json does: \" \\ \n \r \t \b \f,
// other control characters as \u00XX, and with ensureASCII everything
// above U+007F as \uXXXX (UTF-16 surrogate pairs past U+FFFF).
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, r := range s { // invalid UTF-8 reads as U+FFFD
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (ensureASCII && r > 0x7e && r != 0x7f):
			if r > 0xffff {
				r -= 0x10000
				writeJSONString16(b, 0xd800+(r>>10))
				r = 0xdc00 + r&0x3ff
			}
			writeJSONString16(b, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func writeJSONString16(b *strings.Builder, r rune) {
	const hex = "0123456789abcdef"
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hex[(r>>shift)&0xf])
	}
}

// pyFloat formats f as Python's repr (and json.dumps) does: the shortest
// digits that round-trip, in fixed notation with at least one decimal for
// exponents -4 to 15, else as d.ddde+XX; Infinity, -Infinity and NaN.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		mant, tail, _ := strings.Cut(e, "e")
		sign := tail[0]
		digits := strings.TrimLeft(tail[1:], "0")
		if len(digits) < 2 {
			digits = strings.Repeat("0", 2-len(digits)) + digits
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
