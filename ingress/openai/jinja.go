package openai

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// The extension layer over gonja that renders chat templates as
// transformers' apply_chat_template does (a Jinja2 sandbox with
// trim_blocks and lstrip_blocks, plus raise_exception, strftime_now, its own
// tojson and the {% generation %} tag):
//
//   - rewriteConditionals (jinja_rewrite.go) lets gonja parse conditional
//     expressions wherever Jinja allows them, "(a if c else b)" included;
//   - chatEnvironment replaces tojson (jinja_json.go) and the dict methods
//     keys, values and items with ones that keep insertion order, and the
//     trim filter and the str methods strip, lstrip, rstrip, split and
//     rsplit with Python's (jinja_strings.go);
//   - renderGlobals adds raise_exception and strftime_now to a rendering;
//   - generationBlock is transformers' {% generation %} tag.

// chatEnvironment is gonja's default environment with the filters and
// methods of chat templates; it is shared, read-only, by all templates.
var chatEnvironment = newChatEnvironment()

func newChatEnvironment() *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	for name, f := range map[string]exec.FilterFunction{"tojson": filterToJSON, "trim": filterTrim} {
		if err := filters.Replace(name, f); err != nil {
			panic(err) // gonja has both
		}
	}
	controls := exec.NewControlStructureSet(map[string]parser.ControlStructureParser{}).Update(builtins.ControlStructures)
	if err := controls.Register("generation", parseGeneration); err != nil {
		panic(err)
	}
	methods := builtins.Methods
	methods.Dict = orderedDictMethods(methods.Dict)
	methods.Str = pyStrMethods(methods.Str)
	return &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
		Filters:           filters,
		Tests:             builtins.Tests,
		ControlStructures: controls,
		Methods:           methods,
	}
}

// generationBlock is transformers' {% generation %} ... {% endgeneration
// %}, which marks the assistant's text for return_assistant_tokens_mask
// and renders its body.
type generationBlock struct {
	pos  *tokens.Token
	body *nodes.Wrapper
}

func (g *generationBlock) Position() *tokens.Token { return g.pos }
func (g *generationBlock) String() string          { return "generation" }

// Execute renders the body.
func (g *generationBlock) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	return r.ExecuteWrapper(g.body)
}

func parseGeneration(p, args *parser.Parser) (nodes.ControlStructure, error) {
	g := &generationBlock{pos: p.Current()}
	if !args.End() {
		return nil, args.Error("generation takes no arguments", args.Current())
	}
	body, _, err := p.WrapUntil("endgeneration")
	if err != nil {
		return nil, err
	}
	g.body = body
	return g, nil
}

// orderedDictMethods returns gonja's dict methods with keys, values and
// items in insertion order for ordered dicts (request JSON and dict
// literals); gonja's own sort the keys, as they see a Go map.
func orderedDictMethods(base *exec.MethodSet[map[string]any]) *exec.MethodSet[map[string]any] {
	set := map[string]exec.Method[map[string]any]{}
	for _, name := range []string{"get", "pop", "setdefault", "update", "copy", "clear"} {
		if m, ok := base.Get(name); ok {
			set[name] = m
		}
	}
	pairs := func(name string, pick func(k, v *exec.Value) any) {
		sorted, ok := base.Get(name)
		if !ok {
			panic("gonja has no dict method " + name)
		}
		set[name] = func(self map[string]any, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
			d, ok := selfValue.Interface().(*exec.Dict)
			if !ok {
				return sorted(self, selfValue, args)
			}
			if len(args.Args) > 0 || len(args.KwArgs) > 0 {
				return nil, exec.ErrInvalidCall(fmt.Errorf("%s() takes no arguments", name))
			}
			out := make([]any, len(d.Pairs))
			for i, p := range d.Pairs {
				out[i] = pick(p.Key, p.Value)
			}
			return out, nil
		}
	}
	pairs("keys", func(k, _ *exec.Value) any { return k })
	pairs("values", func(_, v *exec.Value) any { return v })
	pairs("items", func(k, v *exec.Value) any { return []any{k, v} })
	return exec.NewMethodSet(set)
}

// raised records the raise_exception call of a rendering, which fails
// it even where gonja would go on (an error value that a test such as
// "is defined" swallows).
type raised struct {
	called bool
	msg    string
}

// renderGlobals returns the functions transformers adds to a rendering:
// raise_exception(message), which fails it (recorded in r), and
// strftime_now(format), which formats now.
func renderGlobals(now time.Time, r *raised) map[string]any {
	return map[string]any{
		"raise_exception": func(msg string) (string, error) {
			if !r.called {
				r.called, r.msg = true, msg
			}
			return "", errors.New(msg)
		},
		"strftime_now": func(format string) string { return strftime(now, format) },
	}
}

// strftime formats t as Python's time.strftime does in the C locale, for
// the directives %a %A %b %B %d %H %I %j %m %M %p %S %y %Y and %%; other
// directives stay as written.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		two := func(n int) string { return fmt.Sprintf("%02d", n) }
		switch format[i] {
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'd':
			b.WriteString(two(t.Day()))
		case 'H':
			b.WriteString(two(t.Hour()))
		case 'I':
			b.WriteString(two((t.Hour()+11)%12 + 1))
		case 'j':
			b.WriteString(fmt.Sprintf("%03d", t.YearDay()))
		case 'm':
			b.WriteString(two(int(t.Month())))
		case 'M':
			b.WriteString(two(t.Minute()))
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'S':
			b.WriteString(two(t.Second()))
		case 'y':
			b.WriteString(two(t.Year() % 100))
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
