package openai

import (
	"regexp"
	"slices"
	"strings"
)

// gonja parses a conditional expression, "a if c else b", only as the
// whole of a {{ }} or a {% set %} value and without a conditional in its
// else branch, while chat templates (Gemma 3's, "(first_user_prefix if
// loop.first else '')") use it anywhere an expression goes, as Jinja does.
// rewriteConditionals turns each one into an expression gonja parses and
// evaluates the same way:
//
//	a if c else b  ->  ((c) and [a] or [b])[0]
//
// gonja's "and" and "or" return an operand and evaluate the right one only
// when needed (Python's rules), so c is evaluated once and then only the
// branch taken; [a] is truthy even when a is not. Without else, b is none
// (Jinja's undefined). The rewrite sees the template as Jinja's lexer does
// (text, comments, raw blocks, tags; strings and brackets inside tags); it
// is not a parser: a conditional is recognised by the keywords "if" and
// "else" at the top level of an expression, which is where the grammar
// allows them (the "if" of "{% for x in xs if c %}" is left alone).

// rawBlock matches a {% raw %} ... {% endraw %} block, copied as is.
var rawBlock = regexp.MustCompile(`(?s)^\{%[-+]?\s*raw\s*[-+]?%\}.*?\{%[-+]?\s*endraw\s*[-+]?%\}`)

// rewriteConditionals returns the template with its conditional
// expressions rewritten for gonja.
func rewriteConditionals(src string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(src, '{')
		if i < 0 || i+1 == len(src) {
			b.WriteString(src)
			return b.String()
		}
		b.WriteString(src[:i])
		src = src[i:]
		switch src[1] {
		case '#':
			end := strings.Index(src, "#}")
			if end < 0 {
				end = len(src) - 2
			}
			b.WriteString(src[:end+2])
			src = src[end+2:]
		case '{', '%':
			if raw := rawBlock.FindString(src); raw != "" {
				b.WriteString(raw)
				src = src[len(raw):]
				continue
			}
			closer := "}}"
			if src[1] == '%' {
				closer = "%}"
			}
			body := src[2 : 2+tagBodyLen(src[2:], closer)]
			b.WriteString(src[:2])
			b.WriteString(rewriteTag(body, src[1] == '{'))
			src = src[2+len(body):] // the closer is copied as text
		default:
			b.WriteByte('{')
			src = src[1:]
		}
	}
}

// tagBodyLen returns the length of a tag's body: up to its closer ("}}" or
// "%}", with its whitespace-control sign) outside strings and brackets.
func tagBodyLen(s, closer string) int {
	depth := 0
	for n := 0; n < len(s); n++ {
		switch c := s[n]; {
		case depth == 0 && strings.HasPrefix(s[n:], closer):
			return n
		case depth == 0 && (c == '-' || c == '+') && strings.HasPrefix(s[n+1:], closer):
			return n
		case c == '\'' || c == '"':
			n = stringEnd(s, n) - 1
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth = max(depth-1, 0)
		}
	}
	return len(s)
}

// stringEnd returns the index after the string literal that starts at i.
func stringEnd(s string, i int) int {
	q := s[i]
	for i++; i < len(s) && s[i] != q; i++ {
		if s[i] == '\\' {
			i++
		}
	}
	return min(i+1, len(s))
}

// rewriteTag rewrites a tag's body: all of a {{ }}; the value of a {% set
// %}, the condition of {% if %} and {% elif %}; and, in any tag, what
// stands inside brackets.
func rewriteTag(body string, output bool) string {
	sign := ""
	if body != "" && (body[0] == '-' || body[0] == '+') {
		sign, body = body[:1], body[1:]
	}
	toks := lexExpr(body)
	from := -1 // where the expression starts
	if output {
		from = 0
	} else if k := slices.IndexFunc(toks, func(t exprToken) bool { return t.kind != ' ' || strings.TrimSpace(t.text) != "" }); k >= 0 && toks[k].kind == 'n' {
		switch toks[k].text {
		case "if", "elif":
			from = k + 1
		case "set":
			depth := 0
			for j := k + 1; j < len(toks) && from < 0; j++ {
				switch toks[j].kind {
				case '(', '[', '{':
					depth++
				case ')', ']', '}':
					depth--
				case '=':
					if depth == 0 {
						from = j + 1
					}
				}
			}
		}
	}
	if from < 0 {
		return sign + rewriteTokens(toks, false)
	}
	return sign + rewriteTokens(toks[:from], false) + rewriteTokens(toks[from:], true)
}

// exprToken is a token of a tag: kind is 's' (a string literal), 'n' (a
// name), one of ( ) [ ] { } , : = (itself), or ' ' (anything else: spaces,
// numbers, operators).
type exprToken struct {
	kind byte
	text string
}

// twoCharOps are the operators of two characters ("=" alone is a keyword
// argument's or a set's).
var twoCharOps = []string{"==", "!=", "<=", ">=", "**", "//"}

// lexExpr splits a tag's body into tokens.
func lexExpr(s string) []exprToken {
	var toks []exprToken
	isName := func(c byte, first bool) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	for n := 0; n < len(s); {
		start, c := n, s[n]
		kind := byte(' ')
		switch {
		case c == '\'' || c == '"':
			kind, n = 's', stringEnd(s, n)
		case isName(c, true):
			for n < len(s) && isName(s[n], false) {
				n++
			}
			kind = 'n'
		case n+1 < len(s) && slices.Contains(twoCharOps, s[n:n+2]):
			n += 2
		case strings.IndexByte("()[]{},:=", c) >= 0:
			kind, n = c, n+1
		default:
			n++
		}
		toks = append(toks, exprToken{kind, s[start:n]})
	}
	return toks
}

// rewriteTokens writes tokens back with the conditionals rewritten: those
// inside brackets, and with expr those at the top level too.
func rewriteTokens(toks []exprToken, expr bool) string {
	var b strings.Builder
	for i := 0; i < len(toks); {
		var text string
		text, i = rewriteGroup(toks, i, expr)
		b.WriteString(text)
		if i < len(toks) { // an unbalanced closing bracket
			b.WriteString(toks[i].text)
			i++
		}
	}
	return b.String()
}

// rewriteGroup rewrites toks from i to the closing bracket of the group
// (not consumed) or the end. With expr the segments between commas,
// colons and "=" (of keyword arguments) are expressions, rewritten if
// conditional; nested groups always are.
func rewriteGroup(toks []exprToken, i int, expr bool) (string, int) {
	var b strings.Builder
	var seg []exprToken
	flush := func() {
		b.WriteString(rewriteSegment(seg, expr))
		seg = nil
	}
	for i < len(toks) {
		t := toks[i]
		switch t.kind {
		case '(', '[', '{':
			inner, j := rewriteGroup(toks, i+1, true)
			text := t.text + inner
			if j < len(toks) {
				text += toks[j].text
				j++
			}
			seg = append(seg, exprToken{' ', text})
			i = j
			continue
		case ')', ']', '}':
			flush()
			return b.String(), i
		case ',', ':', '=':
			flush()
			b.WriteString(t.text)
		default:
			seg = append(seg, t)
		}
		i++
	}
	flush()
	return b.String(), i
}

// rewriteSegment writes one segment, as "((c) and [a] or [b])[0]" if expr
// and it is the conditional "a if c else b" (the segment's surrounding
// spaces kept).
func rewriteSegment(seg []exprToken, expr bool) string {
	text := func(ts []exprToken) string {
		var b strings.Builder
		for _, t := range ts {
			b.WriteString(t.text)
		}
		return b.String()
	}
	isKeyword := func(word string) func(exprToken) bool {
		return func(t exprToken) bool { return t.kind == 'n' && t.text == word }
	}
	all := text(seg)
	ifAt := slices.IndexFunc(seg, isKeyword("if"))
	if !expr || ifAt < 0 || strings.TrimSpace(text(seg[:ifAt])) == "" {
		return all
	}
	cond, alt := seg[ifAt+1:], "none"
	if k := slices.IndexFunc(cond, isKeyword("else")); k >= 0 {
		cond, alt = cond[:k], rewriteSegment(cond[k+1:], true)
	}
	trimmed := strings.TrimSpace(all)
	lead, _, _ := strings.Cut(all, trimmed)
	return lead + "((" + strings.TrimSpace(text(cond)) + ") and [" + strings.TrimSpace(text(seg[:ifAt])) +
		"] or [" + strings.TrimSpace(alt) + "])[0]" + all[len(lead)+len(trimmed):]
}
