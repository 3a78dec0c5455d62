package openai

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Python's str methods that chat templates call and gonja gets wrong:
// strip, lstrip and rstrip without arguments strip only ASCII whitespace
// (Python strips all of str.isspace, e.g. U+00A0) and with arguments can
// cut a multi-byte character; split and rsplit miscount maxsplit and fail
// without a separator. Jinja's trim filter is strip too.

// pyStrMethodNames are gonja's str methods, kept beside these.
var pyStrMethodNames = []string{
	"capitalize", "capwords", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find",
	"format", "format_map", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "islower", "isnumeric",
	"isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "partition", "removeprefix",
	"removesuffix", "replace", "rfind", "rjust", "rpartition", "splitlines", "startswith", "swapcase",
	"title", "upper", "zfill",
}

// pyStrMethods returns gonja's str methods with strip, lstrip, rstrip,
// split and rsplit as Python has them.
func pyStrMethods(base *exec.MethodSet[string]) *exec.MethodSet[string] {
	set := map[string]exec.Method[string]{}
	for _, name := range pyStrMethodNames {
		if m, ok := base.Get(name); ok {
			set[name] = m
		}
	}
	for name, sides := range map[string][2]bool{"strip": {true, true}, "lstrip": {true, false}, "rstrip": {false, true}} {
		set[name] = func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
			chars, err := optionalArgs(name, args, "chars")
			if err != nil {
				return nil, err
			}
			return pyStrip(self, chars[0], sides[0], sides[1]), nil
		}
	}
	for name, right := range map[string]bool{"split": false, "rsplit": true} {
		set[name] = func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
			a, err := optionalArgs(name, args, "sep", "maxsplit")
			if err != nil {
				return nil, err
			}
			maxSplit := -1
			if a[1] != nil && !a[1].IsNil() {
				if !a[1].IsInteger() {
					return nil, exec.ErrInvalidCall(fmt.Errorf("maxsplit %s is not an integer", a[1].String()))
				}
				maxSplit = a[1].Integer()
			}
			if a[0] == nil || a[0].IsNil() {
				return toAnys(pySplitSpace(self, maxSplit, right)), nil
			}
			if !a[0].IsString() || a[0].String() == "" {
				return nil, exec.ErrInvalidCall(errors.New("sep must be a non-empty string or None"))
			}
			return toAnys(pySplit(self, a[0].String(), maxSplit, right)), nil
		}
	}
	return exec.NewMethodSet(set)
}

// filterTrim is Jinja's trim: value.strip(chars).
func filterTrim(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	chars, err := optionalArgs("trim", params, "chars")
	if err != nil {
		return exec.AsValue(err)
	}
	return exec.AsValue(pyStrip(in.String(), chars[0], true, true))
}

// optionalArgs reads a call's optional arguments, positional or by name
// (nil where absent).
func optionalArgs(fn string, args *exec.VarArgs, names ...string) ([]*exec.Value, error) {
	out := make([]*exec.Value, len(names))
	if len(args.Args) > len(names) {
		return nil, exec.ErrInvalidCall(fmt.Errorf("%s takes at most %d arguments", fn, len(names)))
	}
	copy(out, args.Args)
	for k, v := range args.KwArgs {
		i := slices.Index(names, k)
		if i < 0 || out[i] != nil {
			return nil, exec.ErrInvalidCall(fmt.Errorf("%s: unexpected argument %s", fn, k))
		}
		out[i] = v
	}
	return out, nil
}

// isPySpace is Python's str.isspace for one character.
func isPySpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// pyStrip is str.strip (left, right) or lstrip or rstrip: chars nil or
// none strips whitespace, else the characters of chars.
func pyStrip(s string, chars *exec.Value, left, right bool) string {
	cut := isPySpace
	if chars != nil && !chars.IsNil() {
		set := chars.String()
		cut = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s
}

// pySplit is str.split(sep, maxsplit), or rsplit with right.
func pySplit(s, sep string, maxSplit int, right bool) []string {
	switch {
	case maxSplit < 0:
		return strings.Split(s, sep)
	case !right:
		return strings.SplitN(s, sep, maxSplit+1)
	}
	var tail []string
	for ; maxSplit > 0; maxSplit-- {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		tail = append(tail, s[i+len(sep):])
		s = s[:i]
	}
	slices.Reverse(tail)
	return append([]string{s}, tail...)
}

// pySplitSpace is str.split(None, maxsplit), or rsplit with right: runs of
// whitespace separate, and the unsplit rest keeps its inner and far-side
// whitespace.
func pySplitSpace(s string, maxSplit int, right bool) []string {
	if right {
		r := []rune(s)
		slices.Reverse(r)
		parts := pySplitSpace(string(r), maxSplit, false)
		for i, p := range parts {
			pr := []rune(p)
			slices.Reverse(pr)
			parts[i] = string(pr)
		}
		slices.Reverse(parts)
		return parts
	}
	parts := []string{}
	for {
		s = strings.TrimLeftFunc(s, isPySpace)
		if s == "" {
			return parts
		}
		if maxSplit == 0 {
			return append(parts, s)
		}
		end := strings.IndexFunc(s, isPySpace)
		if end < 0 {
			return append(parts, s)
		}
		parts = append(parts, s[:end])
		s = s[end:]
		maxSplit--
	}
}

func toAnys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
