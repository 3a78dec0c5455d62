package openai

import (
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// jsonMode is the parser state of a prefix of one JSON object (RFC 8259),
// byte by byte: step reports whether a byte can continue the prefix. It is
// a value: copying it forks the parse (stack is immutable, pushes make a
// new string).
type jsonMode struct {
	stack string // the open containers, '{' or '['
	mode  uint8
	lit   string // the rest of true, false or null while in mLiteral
	hex   uint8  // hex digits left of a \uXXXX escape
	key   bool   // the string being read is an object key
	space uint8  // whitespace bytes in a row outside strings
	// digits counts the digits of the number part being read (bounded
	// as jsonSchema's: maxDigits, maxExpDigits).
	digits uint8
}

// maxSpace bounds a run of whitespace between tokens of the JSON text
// (a newline and an indentation fit): without it a model can fill
// max_tokens with whitespace, valid JSON all along (OpenAI warns of this).
// The text starts at the '{' itself.
const maxSpace = 16

const (
	mStart    uint8 = iota // before the top-level object: '{'
	mValue                 // a value
	mArrFirst              // after '[': a value or ']'
	mObjFirst              // after '{': a key or '}'
	mKey                   // after ',' in an object: a key
	mColon                 // after a key: ':'
	mAfter                 // after a value: ',' or the closing bracket
	mString
	mEscape
	mHex
	mLiteral
	mNumMinus // after '-': a digit
	mNumZero  // a leading 0: '.', 'e', or the end
	mNumInt   // digits: more, '.', 'e', or the end
	mNumDot   // after '.': a digit
	mNumFrac  // fraction digits: more, 'e', or the end
	mNumE     // after 'e': a sign or a digit
	mNumESign // after the exponent's sign: a digit
	mNumExp   // exponent digits: more, or the end
	mDone     // the top-level object is closed
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// value starts a value with c.
func (j *jsonMode) value(c byte) bool {
	switch {
	case c == '{':
		j.stack, j.mode = j.stack+"{", mObjFirst
	case c == '[':
		j.stack, j.mode = j.stack+"[", mArrFirst
	case c == '"':
		j.mode, j.key = mString, false
	case c == '-':
		j.mode = mNumMinus
	case c == '0':
		j.mode, j.digits = mNumZero, 1
	case c >= '1' && c <= '9':
		j.mode, j.digits = mNumInt, 1
	case c == 't':
		j.mode, j.lit = mLiteral, "rue"
	case c == 'f':
		j.mode, j.lit = mLiteral, "alse"
	case c == 'n':
		j.mode, j.lit = mLiteral, "ull"
	default:
		return false
	}
	return true
}

// after reads c after a complete value.
func (j *jsonMode) after(c byte) bool {
	top := byte(0)
	if len(j.stack) > 0 {
		top = j.stack[len(j.stack)-1]
	}
	switch {
	case isSpace(c):
	case c == ',' && top == '{':
		j.mode = mKey
	case c == ',' && top == '[':
		j.mode = mValue
	case (c == '}' && top == '{') || (c == ']' && top == '['):
		j.close()
	default:
		return false
	}
	return true
}

func (j *jsonMode) close() {
	j.stack = j.stack[:len(j.stack)-1]
	j.mode = mAfter
	if j.stack == "" {
		j.mode = mDone
	}
}

// endNumber ends a number at c, which belongs to what follows.
func (j *jsonMode) endNumber(c byte) bool {
	j.mode = mAfter
	return j.after(c)
}

// step reads one byte; false if no JSON object starts with the bytes so
// far and c.
func (j *jsonMode) step(c byte) bool {
	if j.mode != mString && j.mode != mEscape && j.mode != mHex {
		if !isSpace(c) {
			j.space = 0
		} else if j.space++; j.space > maxSpace {
			return false
		}
	}
	switch j.mode {
	case mStart:
		return c == '{' && j.value(c)
	case mValue:
		return isSpace(c) || j.value(c)
	case mArrFirst:
		if c == ']' {
			j.close()
			return true
		}
		return isSpace(c) || j.value(c)
	case mObjFirst, mKey:
		switch {
		case isSpace(c):
		case c == '"':
			j.mode, j.key = mString, true
		case c == '}' && j.mode == mObjFirst:
			j.close()
		default:
			return false
		}
		return true
	case mColon:
		switch {
		case isSpace(c):
		case c == ':':
			j.mode = mValue
		default:
			return false
		}
		return true
	case mAfter:
		return j.after(c)
	case mString:
		switch {
		case c == '"':
			j.mode = mAfter
			if j.key {
				j.mode = mColon
			}
		case c == '\\':
			j.mode = mEscape
		case c < 0x20:
			return false
		}
		return true
	case mEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			j.mode = mString
		case 'u':
			j.mode, j.hex = mHex, 4
		default:
			return false
		}
		return true
	case mHex:
		if !isHex(c) {
			return false
		}
		if j.hex--; j.hex == 0 {
			j.mode = mString
		}
		return true
	case mLiteral:
		if c != j.lit[0] {
			return false
		}
		if j.lit = j.lit[1:]; j.lit == "" {
			j.mode = mAfter
		}
		return true
	case mNumMinus:
		switch {
		case c == '0':
			j.mode, j.digits = mNumZero, 1
		case isDigit(c):
			j.mode, j.digits = mNumInt, 1
		default:
			return false
		}
		return true
	case mNumZero, mNumInt:
		switch {
		case isDigit(c) && j.mode == mNumInt:
			return j.digit(maxDigits)
		case c == '.':
			j.mode = mNumDot
		case c == 'e' || c == 'E':
			j.mode = mNumE
		default:
			return j.endNumber(c)
		}
		return true
	case mNumDot:
		if !isDigit(c) {
			return false
		}
		j.mode, j.digits = mNumFrac, 1
		return true
	case mNumFrac:
		switch {
		case isDigit(c):
			return j.digit(maxDigits)
		case c == 'e' || c == 'E':
			j.mode = mNumE
		default:
			return j.endNumber(c)
		}
		return true
	case mNumE:
		switch {
		case c == '+' || c == '-':
			j.mode = mNumESign
		case isDigit(c):
			j.mode, j.digits = mNumExp, 1
		default:
			return false
		}
		return true
	case mNumESign, mNumExp:
		if isDigit(c) {
			if j.mode == mNumExp {
				return j.digit(maxExpDigits)
			}
			j.mode, j.digits = mNumExp, 1
			return true
		}
		if j.mode == mNumESign {
			return false
		}
		return j.endNumber(c)
	}
	return false // mDone: nothing may follow the object
}

// digit reads one more digit of a number part of at most limit digits.
func (j *jsonMode) digit(limit uint8) bool {
	if j.digits >= limit {
		return false
	}
	j.digits++
	return true
}

// feed steps through s; false (and j unchanged in meaning) if s cannot
// continue the prefix.
func (j *jsonMode) feed(s string) bool {
	for i := range len(s) {
		if !j.step(s[i]) {
			return false
		}
	}
	return true
}

// need is the length in bytes of the shortest text that closes the
// object from here: what the current token needs, then one closing
// bracket per open container.
func (j *jsonMode) need() int {
	n := len(j.stack)
	switch j.mode {
	case mStart:
		return 2 // {}
	case mValue, mNumMinus, mNumDot, mNumE, mNumESign:
		return n + 1 // 0, or the digit a number lacks
	case mKey:
		return n + 4 // "":0
	case mColon:
		return n + 2 // :0
	case mString, mEscape, mHex:
		l := n + 1 // "
		if j.key {
			l += 2 // :0
		}
		switch j.mode {
		case mEscape:
			l++
		case mHex:
			l += int(j.hex)
		}
		return l
	case mLiteral:
		return n + len(j.lit)
	}
	return n // mArrFirst, mObjFirst, mAfter, numbers that may end, mDone
}

// jsonObject is the blocks.Constraint of response_format {"type":
// "json_object"}: the text generated is a prefix of one JSON object, and
// the model may end it (EOS) only once the object is closed, right after
// it. Tokens without text (control pieces) and BOS are never allowed, so
// every token drawn advances the text. Told its budget (SetBudget), it
// allows only tokens after which the object can still be closed in the
// tokens left (one token per byte of the shortest closing text, as
// jsonSchema).
type jsonObject struct {
	pieces   []string
	bos, eos int
	state    jsonMode
	budget   int // tokens left; < 0: unbounded
}

var _ blocks.BudgetedConstraint = (*jsonObject)(nil)

// newJSONObject returns a fresh json_object constraint over tok's pieces.
func newJSONObject(tok tokenizer.Tokenizer) *jsonObject {
	c := &jsonObject{pieces: make([]string, tok.VocabSize()), bos: tok.BOS(), eos: tok.EOS(), budget: -1}
	for id := range c.pieces {
		c.pieces[id] = tok.Decode(-1, id)
	}
	return c
}

// ResponseFormat is what replicas are asked for instead: their engine
// constrains its own output.
func (c *jsonObject) ResponseFormat() any { return map[string]string{"type": "json_object"} }

func (c *jsonObject) Allowed(id int) bool {
	switch {
	case id == c.eos:
		return c.state.mode == mDone
	case id == c.bos || id < 0 || id >= len(c.pieces) || c.pieces[id] == "":
		return false
	}
	next := c.state
	if !next.feed(c.pieces[id]) {
		return false
	}
	if c.budget < 0 || c.state.need() > c.budget {
		return true // unbounded, or already too late to close
	}
	return next.need() <= c.budget-1
}

// SetBudget tells the constraint how many tokens may still be drawn.
func (c *jsonObject) SetBudget(tokens int) { c.budget = tokens }

// Done reports that the object is closed: only EOS may follow.
func (c *jsonObject) Done() bool { return c.state.mode == mDone }

func (c *jsonObject) Accept(id int) {
	if id >= 0 && id < len(c.pieces) && id != c.eos {
		c.state.feed(c.pieces[id])
		if c.budget > 0 {
			c.budget--
		}
	}
}
